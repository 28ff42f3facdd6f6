//! Tests of auto.
