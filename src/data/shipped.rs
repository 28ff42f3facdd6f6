//! Tests over the shipped data sets.
