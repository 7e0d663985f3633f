//! Hardware logging schemes of the MorLog and EHOU papers' comparisons.
pub mod redu;
