//! Tests of LazyBB on small synthetic data (written once the data builders land).
