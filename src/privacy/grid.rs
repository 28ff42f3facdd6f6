//! The fixed grid that every mechanism rounds its scores to before adding
//! exact integer noise.
//!
//! A score `v` (already in noise units) becomes the integer
//! `round(v 2^30)`: multiplying a float by a power of two and rounding are
//! exact operations, so the grid value is a function of the computed float
//! alone, and the noise is then added in integer arithmetic. Rounding moves a
//! value by at most half a step, so it adds at most `2^-30` to the
//! difference between neighbours' values: [`GRID_EPSILON`] `= 2^-29` per
//! report-noisy-max call (`privacy::laplace` has the proof).

use super::PrivacyError;

/// Bits of the grid that noise-unit scores are rounded to.
pub const GRID_BITS: u32 = 30;

/// The grid step `2^-30` in noise units.
pub const GRID: f64 = 1.0 / (1u64 << GRID_BITS) as f64;

/// Extra epsilon per report-noisy-max call that the rounding costs:
/// `2 * 2^-30`.
pub const GRID_EPSILON: f64 = 2.0 * GRID;

/// Largest `|v|` accepted: `v 2^30` must fit comfortably in an `i128`.
const MAX_ABS: f64 = (1u128 << 90) as f64;

/// Largest score in noise units (`score / scale`) that report-noisy-max
/// accepts; the parameter checks (`learn::params::check_scales`) keep every
/// calibration inside it.
pub const MAX_NOISE_UNITS: f64 = MAX_ABS;

/// `round(v 2^30)`, exactly (errors on NaN, infinities and `|v| > 2^90`).
pub(crate) fn to_grid(v: f64) -> Result<i128, PrivacyError> {
    if !v.is_finite() {
        return Err(PrivacyError::InvalidParameter(
            "a mechanism got a non-finite score".into(),
        ));
    }
    if v.abs() > MAX_ABS {
        return Err(PrivacyError::InvalidParameter(format!(
            "a mechanism got a score of magnitude {v:e}, above 2^90"
        )));
    }
    // Multiplying by 2^30 is exact (no overflow below 2^120); `round` is exact;
    // the result is an integer of magnitude below 2^121, exact in i128.
    Ok((v * (1u64 << GRID_BITS) as f64).round() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_exactly_and_rejects_bad_values() {
        assert_eq!(to_grid(1.0).unwrap(), 1 << 30);
        assert_eq!(to_grid(-0.5 * GRID).unwrap(), -1); // half away from zero
        assert_eq!(to_grid(0.49 * GRID).unwrap(), 0);
        assert_eq!(to_grid(-3.25).unwrap(), -(13 << 28));
        assert!(to_grid(f64::NAN).is_err());
        assert!(to_grid(f64::INFINITY).is_err());
        assert!(to_grid(2f64.powi(91)).is_err());
        assert_eq!(to_grid(2f64.powi(90)).unwrap(), 1i128 << 120);
    }
}
