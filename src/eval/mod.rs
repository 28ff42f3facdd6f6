//! eval (in progress).
