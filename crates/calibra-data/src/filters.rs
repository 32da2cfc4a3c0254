//! Separable Gaussian filtering on f32 planes, shared by the blur perturbation and the synthetic
//! suites. Boundary mode is scipy's `reflect` (half-sample symmetric: `d c b a | a b c d | d c b a`)
//! and the kernel is truncated at `4σ`, as `scipy.ndimage.gaussian_filter(truncate=4.0)`.

/// The normalised 1-D Gaussian kernel of standard deviation `sigma`, radius `round(4σ)` (scipy's
/// `int(truncate * sigma + 0.5)`), weights `exp(-x²/2σ²) / Σ`.
pub fn gaussian_kernel(sigma: f64) -> Vec<f64> {
    let radius = (4.0 * sigma + 0.5) as i64;
    let mut k: Vec<f64> =
        (-radius..=radius).map(|x| (-(x * x) as f64 / (2.0 * sigma * sigma)).exp()).collect();
    let sum: f64 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

/// Index `i` reflected into `0..n` with scipy's `reflect` rule (edge sample repeated).
fn reflect(i: i64, n: i64) -> usize {
    if n == 1 {
        return 0;
    }
    let period = 2 * n;
    let mut m = i.rem_euclid(period);
    if m >= n {
        m = period - 1 - m;
    }
    m as usize
}

/// Blurs an interleaved `width × height × channels` f64 buffer in place with a Gaussian of standard
/// deviation `sigma` pixels along both axes (channels are filtered independently). `sigma <= 0`
/// leaves the buffer unchanged.
pub fn gaussian_blur(data: &mut [f64], width: usize, height: usize, channels: usize, sigma: f64) {
    if sigma <= 0.0 || data.is_empty() {
        return;
    }
    let k = gaussian_kernel(sigma);
    let r = (k.len() / 2) as i64;
    let mut tmp = vec![0.0; data.len()];
    // Rows (along x).
    for y in 0..height {
        for x in 0..width {
            for c in 0..channels {
                let mut acc = 0.0;
                for (t, w) in k.iter().enumerate() {
                    let xx = reflect(x as i64 + t as i64 - r, width as i64);
                    acc += w * data[(y * width + xx) * channels + c];
                }
                tmp[(y * width + x) * channels + c] = acc;
            }
        }
    }
    // Columns (along y).
    for y in 0..height {
        for x in 0..width {
            for c in 0..channels {
                let mut acc = 0.0;
                for (t, w) in k.iter().enumerate() {
                    let yy = reflect(y as i64 + t as i64 - r, height as i64);
                    acc += w * tmp[(yy * width + x) * channels + c];
                }
                data[(y * width + x) * channels + c] = acc;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_matches_scipy_rule() {
        let got: Vec<usize> = (-4..8).map(|i| reflect(i, 4)).collect();
        assert_eq!(got, vec![3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0]);
    }

    #[test]
    fn blur_preserves_a_constant_and_the_mean_of_a_periodic_signal() {
        let mut flat = vec![0.25; 5 * 4 * 3];
        gaussian_blur(&mut flat, 5, 4, 3, 1.7);
        assert!(flat.iter().all(|v| (v - 0.25).abs() < 1e-12));
        let k = gaussian_kernel(2.0);
        assert!((k.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(k.len(), 17);
    }
}
