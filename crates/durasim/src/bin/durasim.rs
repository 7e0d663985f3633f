use clap::Parser;

// Huge pages for the simulator's large blocks (durasim::alloc).
#[global_allocator]
static HEAP: durasim::alloc::HugePageAlloc = durasim::alloc::HugePageAlloc;

fn main() {
    // A closed pipe ends the program quietly (`durasim list params | head`),
    // as for any Unix filter, instead of a panic in println!.
    #[cfg(unix)]
    // SAFETY: set before any thread starts; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match durasim::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    match durasim::cli::main_with(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
