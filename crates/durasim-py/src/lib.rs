//! Python bindings: `durasim._native`. Thin by design — every run goes
//! through the same code path as the `durasim` CLI (`cli::spec_for`,
//! `engine::run`, `Engine::report_json`), so a Python result and a CLI JSON
//! report of the same run are the same document. Results cross the boundary
//! as JSON text; the Python package (`python/durasim`) parses and wraps it.

use durasim::cli::crashtest::{options as crashtest_options, CrashtestArgs};
use durasim::cli::{spec_for, CommonArgs};
use durasim::config::Params;
use durasim::crash;
use durasim::{engine, schemes, workloads, Error};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

// Huge pages for the simulator's large blocks, as in the CLI (alloc.rs).
#[global_allocator]
static HEAP: durasim::alloc::HugePageAlloc = durasim::alloc::HugePageAlloc;

/// Bad user input becomes `ValueError` (the message names the field and the
/// valid choices); I/O errors `OSError`; anything else `RuntimeError`.
fn to_py(e: Error) -> PyErr {
    match e {
        Error::Input(m) => PyValueError::new_err(m),
        e @ Error::Io { .. } => PyOSError::new_err(e.to_string()),
        Error::Internal(m) => PyRuntimeError::new_err(m),
    }
}

/// Calls a Python progress callback `(done, total)` at most every 0.2 s
/// (and at the end), taking the GIL only then, so it costs nothing next to
/// the simulation.
#[derive(Default)]
struct Throttle {
    last: Option<std::time::Instant>,
}

impl Throttle {
    fn call(&mut self, cb: Option<&PyObject>, done: u64, total: u64) {
        let Some(cb) = cb else { return };
        let due = self.last.is_none_or(|t| t.elapsed().as_millis() >= 200);
        if due || done >= total {
            self.last = Some(std::time::Instant::now());
            Python::with_gil(|py| {
                // A failing callback must not abort the simulation.
                let _ = cb.call1(py, (done, total));
            });
        }
    }
}

/// Run one simulation and return the CLI's JSON report as text.
///
/// `set` holds `(key, value)` pairs exactly as `--set key=value` would.
/// The GIL is released while the simulation runs; `progress(done_tx,
/// total_tx)`, when given, is called with the GIL at most every 0.2 s and
/// once at the end.
#[pyfunction]
#[pyo3(signature = (scheme, workload, threads=None, tx=None, seed=1, config=None, set=Vec::new(), progress=None))]
// External API: each argument is a Python keyword argument (the CLI's options).
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    scheme: &str,
    workload: &str,
    threads: Option<usize>,
    tx: Option<u64>,
    seed: u64,
    config: Option<String>,
    set: Vec<(String, String)>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let common = CommonArgs {
        config,
        set: set.into_iter().map(|(k, v)| format!("{k}={v}")).collect(),
        threads,
        tx,
        seed,
    };
    let spec = spec_for(scheme, workload, &common).map_err(to_py)?;
    // As the CLI: a scheme without the hardware its mechanism needs, and a
    // run too short for its mechanism, are warned about; here in the
    // report's `warnings` list (`durasim.run` prints them, a sweep keeps
    // them in a column).
    let mut warnings: Vec<String> = durasim::cli::hardware_warning(scheme, &spec.params)
        .into_iter()
        .collect();
    let total_tx = spec.tx;
    let report = py
        .allow_threads(move || {
            let mut throttle = Throttle::default();
            engine::run(spec, &mut |done| {
                throttle.call(progress.as_ref(), done, total_tx)
            })
            .map(|e| {
                warnings.extend(durasim::cli::run_length_warnings(scheme, &e));
                let mut report = e.report_json();
                durasim::cli::add_warnings(&mut report, &warnings);
                report
            })
        })
        .map_err(to_py)?;
    Ok(report.to_string())
}

/// Crash-test one run, exactly as `durasim crashtest` does; returns its JSON
/// report as text. Arguments are the CLI's options (`points` is "all" or a
/// count, `tear_mask` decimal or 0x.., `recovery_crashes` a count or "all",
/// `None` for the CLI's default).
#[pyfunction]
#[pyo3(signature = (scheme, workload, threads, tx, seed, points, crash_at=None, tear_mask=None, torn=false, recovery_crashes=None, config=None, set=Vec::new(), progress=None))]
// External API: each argument is a Python keyword argument (the CLI's options).
#[allow(clippy::too_many_arguments)]
fn crashtest(
    py: Python<'_>,
    scheme: &str,
    workload: &str,
    threads: usize,
    tx: u64,
    seed: u64,
    points: String,
    crash_at: Option<u64>,
    tear_mask: Option<String>,
    torn: bool,
    recovery_crashes: Option<String>,
    config: Option<String>,
    set: Vec<(String, String)>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let set: Vec<String> = set.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    let args = CrashtestArgs {
        scheme: scheme.to_string(),
        workload: workload.to_string(),
        config: config.clone(),
        set: set.clone(),
        tx,
        threads,
        seed,
        points,
        crash_at,
        tear_mask,
        torn,
        recovery_crashes: recovery_crashes
            .unwrap_or_else(|| crash::DEFAULT_RECOVERY_CRASHES.to_string()),
        json: None,
    };
    let opts = crashtest_options(&args).map_err(to_py)?;
    let common = CommonArgs {
        config,
        set,
        threads: Some(threads),
        tx: Some(tx),
        seed,
    };
    let spec = spec_for(scheme, workload, &common).map_err(to_py)?;
    // `progress(done, total)` is called with the GIL at most every 0.2 s
    // (and once at the end), so it costs nothing next to the crash checks.
    let report = py
        .allow_threads(move || {
            let mut throttle = Throttle::default();
            crash::crashtest(spec, &opts, &mut |done, total| {
                throttle.call(progress.as_ref(), done, total)
            })
        })
        .map_err(to_py)?;
    Ok(report.to_json().to_string())
}

/// Registered schemes as JSON: `[{name, description, durability, params,
/// defaults}]`.
#[pyfunction]
fn schemes_json() -> String {
    let v: Vec<serde_json::Value> = schemes::REGISTRY
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "description": s.description,
                "durability": format!("{:?}", s.durability),
                "params": s.params.iter().map(|p| p.key).collect::<Vec<_>>(),
                // What it runs on and for how long without config/tx.
                "defaults": defaults_json(&s.defaults),
            })
        })
        // Named designs (schemes::PRESETS): a scheme with fixed settings.
        .chain(schemes::presets().map(|p| {
            let base = schemes::find(p.scheme).expect("active presets name registered schemes");
            serde_json::json!({
                "name": p.name,
                "description": p.description,
                "durability": format!("{:?}", base.durability),
                "params": base.params.iter().map(|q| q.key).collect::<Vec<_>>(),
                "defaults": defaults_json(&base.defaults),
                "preset": {"scheme": p.scheme, "set": p.set.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>()},
            })
        }))
        .collect();
    serde_json::Value::Array(v).to_string()
}

/// A scheme's default machine and run length (`durasim list schemes`).
fn defaults_json(d: &schemes::RunDefaults) -> serde_json::Value {
    serde_json::json!({
        "machine": d.machine.map(|m| format!("{}{}", m.path, m.variant)),
        "paper": d.machine.map(|m| m.paper),
        "threads": d.machine.map_or(durasim::cli::DEFAULT_THREADS, |m| m.threads),
        "tx": d.tx,
        "reaches": d.reaches,
    })
}

/// Registered workloads as JSON: `[{name, description}]`.
#[pyfunction]
fn workloads_json() -> String {
    let v: Vec<serde_json::Value> = workloads::REGISTRY
        .iter()
        .map(|w| serde_json::json!({"name": w.name, "description": w.description}))
        .collect();
    serde_json::Value::Array(v).to_string()
}

/// Every parameter (engine + all schemes) as JSON:
/// `[{key, default, unit, check, source, doc}]`, sorted by key; the hidden
/// test-only `<scheme>.mutant` keys are left out, as in `durasim list params`.
#[pyfunction]
fn params_json() -> String {
    let p = Params::defaults(&schemes::all_params());
    let v: Vec<serde_json::Value> = p
        .specs()
        .filter(|s| schemes::is_public_param(s.key))
        .map(|s| {
            serde_json::json!({
                "key": s.key,
                "default": s.default.value().to_json(),
                "unit": s.unit,
                "check": format!("{:?}", s.check),
                "source": s.source,
                "doc": s.doc,
            })
        })
        .collect();
    serde_json::Value::Array(v).to_string()
}

/// The durasim core version compiled into this extension.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// HOOP's modelled recovery time (ns) of an OOP region of `region_bytes`
/// whose updates coalesce by `reduction_ratio`, with `threads` recovery
/// threads and `bandwidth_gbps` of NVM bandwidth (paper experiment (g)).
#[pyfunction]
#[pyo3(signature = (region_bytes, reduction_ratio, threads, bandwidth_gbps, set=Vec::new()))]
fn hoop_recovery_time_ns(
    region_bytes: u64,
    reduction_ratio: f64,
    threads: u64,
    bandwidth_gbps: f64,
    set: Vec<(String, String)>,
) -> PyResult<f64> {
    let bandwidth_ok = bandwidth_gbps.is_finite() && bandwidth_gbps > 0.0;
    if threads == 0 || !bandwidth_ok || !(0.0..=1.0).contains(&reduction_ratio) {
        return Err(PyValueError::new_err(format!(
            "invalid recovery model input: threads={threads} (>= 1), bandwidth_gbps={bandwidth_gbps} (> 0), reduction_ratio={reduction_ratio} (0..=1)"
        )));
    }
    let mut p = Params::defaults(&schemes::all_params());
    for (k, v) in &set {
        p.set_str(k, v).map_err(to_py)?;
    }
    Ok(schemes::out_of_place::hoop::recovery::recovery_time_ns(
        &p,
        region_bytes,
        reduction_ratio,
        threads,
        bandwidth_gbps,
    ))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(crashtest, m)?)?;
    m.add_function(wrap_pyfunction!(schemes_json, m)?)?;
    m.add_function(wrap_pyfunction!(workloads_json, m)?)?;
    m.add_function(wrap_pyfunction!(params_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(hoop_recovery_time_ns, m)?)?;
    Ok(())
}
