//! Accuracy checks on the shipped data (after the data module lands).
