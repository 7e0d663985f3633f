//! MorLog Fig. 8: the 2-bit log state of each word of an L1 line, kept in
//! the line's extension ([`LineExt`], Fig. 7: `word_mask` = low bit,
//! `word_mask2` = high bit), its transition function, and the scheme's copy
//! of the L1-resident redo data of ULog words ([`Shadow`]).

use crate::cache::LineExt;

/// The 2-bit log state of one word of an L1 line (MorLog Fig. 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordState {
    /// Not updated by the line's transaction.
    Clean,
    /// Updated; its undo+redo entry is still in the undo+redo buffer.
    Dirty,
    /// Its undo+redo entry is persisted (undo and newest redo in the log).
    URLog,
    /// Oldest undo persisted, newest redo only in the L1 line.
    ULog,
}

/// Events that move a word between states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A store by the line's transaction (the one that made it Dirty).
    Store,
    /// The word's undo+redo entry left the buffer for the log.
    UrPersisted,
    /// The line leaves the L1, or a newer transaction updates it, or
    /// (morlog) the transaction commits: the L1 state is dropped.
    Leave,
    /// A buffered redo entry of the word was discarded because the
    /// transaction updates the line again: its redo is back in the L1.
    RedoDiscarded,
}

/// What a transition asks of the buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    /// Create an undo+redo entry.
    CreateUr,
    /// Coalesce the store into the buffered undo+redo entry.
    Coalesce,
    /// Keep the redo in place in the L1 line.
    KeepInL1,
    /// Create a redo entry from the L1 line.
    CreateRedo,
}

/// Fig. 8's transition function.
pub fn transition(s: WordState, ev: Event) -> (WordState, Action) {
    use Action as A;
    use WordState::*;
    match (s, ev) {
        (Clean, Event::Store) => (Dirty, A::CreateUr),
        (Dirty, Event::Store) => (Dirty, A::Coalesce),
        (URLog, Event::Store) | (ULog, Event::Store) => (ULog, A::KeepInL1),
        (Dirty, Event::UrPersisted) => (URLog, A::None),
        (s, Event::UrPersisted) => (s, A::None),
        (ULog, Event::Leave) => (Clean, A::CreateRedo),
        (_, Event::Leave) => (Clean, A::None),
        (Clean, Event::RedoDiscarded) => (ULog, A::None),
        (s, Event::RedoDiscarded) => (s, A::None),
    }
}

pub fn word_state(ext: &LineExt, w: usize) -> WordState {
    match ((ext.word_mask2 >> w) & 1, (ext.word_mask >> w) & 1) {
        (0, 0) => WordState::Clean,
        (0, _) => WordState::Dirty,
        (_, 0) => WordState::URLog,
        _ => WordState::ULog,
    }
}

pub fn set_word_state(ext: &mut LineExt, w: usize, s: WordState) {
    let (hi, lo) = match s {
        WordState::Clean => (0, 0),
        WordState::Dirty => (0, 1),
        WordState::URLog => (1, 0),
        WordState::ULog => (1, 1),
    };
    let m = !(1u8 << w);
    ext.word_mask = (ext.word_mask & m) | (lo << w);
    ext.word_mask2 = (ext.word_mask2 & m) | (hi << w);
}

/// The L1-resident redo data of a line's ULog words (the line's bytes,
/// which the store hook does not pass).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shadow {
    pub(super) txid: u32,
    pub(super) mask: u8,
    pub(super) vals: [u64; 8],
}

#[cfg(test)]
mod tests {
    use super::*;

    use WordState::*;

    /// Every transition of Fig. 8.
    #[test]
    fn fig8_transitions() {
        let cases = [
            (Clean, Event::Store, Dirty, Action::CreateUr),
            (Dirty, Event::Store, Dirty, Action::Coalesce),
            (URLog, Event::Store, ULog, Action::KeepInL1),
            (ULog, Event::Store, ULog, Action::KeepInL1),
            (Dirty, Event::UrPersisted, URLog, Action::None),
            (Clean, Event::UrPersisted, Clean, Action::None),
            (URLog, Event::UrPersisted, URLog, Action::None),
            (ULog, Event::UrPersisted, ULog, Action::None),
            (ULog, Event::Leave, Clean, Action::CreateRedo),
            (URLog, Event::Leave, Clean, Action::None),
            (Dirty, Event::Leave, Clean, Action::None),
            (Clean, Event::Leave, Clean, Action::None),
            (Clean, Event::RedoDiscarded, ULog, Action::None),
            (ULog, Event::RedoDiscarded, ULog, Action::None),
        ];
        for (s, ev, want, act) in cases {
            assert_eq!(transition(s, ev), (want, act), "{s:?} on {ev:?}");
        }
    }

    /// The 2-bit states live in the two word masks, one word at a time.
    #[test]
    fn word_states_round_trip_in_line_ext() {
        let mut ext = LineExt::default();
        let states = [Clean, Dirty, URLog, ULog, ULog, URLog, Dirty, Clean];
        for (w, s) in states.iter().enumerate() {
            set_word_state(&mut ext, w, *s);
        }
        for (w, s) in states.iter().enumerate() {
            assert_eq!(word_state(&ext, w), *s, "word {w}");
        }
        set_word_state(&mut ext, 3, Clean);
        assert_eq!(word_state(&ext, 3), Clean);
        assert_eq!(word_state(&ext, 2), URLog);
        assert_eq!(std::mem::size_of::<LineExt>(), 8);
    }
}
