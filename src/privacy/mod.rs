//! privacy (in progress).
