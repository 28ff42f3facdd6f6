//! learn (in progress).
