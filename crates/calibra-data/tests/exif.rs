//! EXIF orientation: a JPEG stored 16 × 8 with orientation 6 must decode as Pillow shows it after
//! `ImageOps.exif_transpose` (golden pixels written by scripts/fixtures/make_data_fixtures.py).

use calibra_data::ImageU8;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exif").join(rel)
}

/// (width, height, interleaved RGB) of one image in the golden file.
fn golden_image(golden: &Value, key: &str) -> (u32, u32, Vec<u8>) {
    let g = &golden[key];
    let rgb = g["rgb"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
    (g["width"].as_u64().unwrap() as u32, g["height"].as_u64().unwrap() as u32, rgb)
}

/// The 8 orientations (the dihedral group of the rectangle) of an image, by index mapping:
/// `(name, width, height, rgb)`.
fn all_orientations(w: u32, h: u32, rgb: &[u8]) -> Vec<(&'static str, u32, u32, Vec<u8>)> {
    let (w, h) = (w as usize, h as usize);
    let at = |x: usize, y: usize| &rgb[(y * w + x) * 3..(y * w + x) * 3 + 3];
    // Each maps an output pixel (x, y) of an output of size (ow, oh) to a stored pixel.
    type Map = fn(usize, usize, usize, usize) -> (usize, usize);
    let maps: [(&str, bool, Map); 8] = [
        ("identity", false, |x, y, _, _| (x, y)),
        ("flip horizontal", false, |x, y, w, _| (w - 1 - x, y)),
        ("rotate 180", false, |x, y, w, h| (w - 1 - x, h - 1 - y)),
        ("flip vertical", false, |x, y, _, h| (x, h - 1 - y)),
        ("transpose", true, |x, y, _, _| (y, x)),
        ("rotate 90 clockwise", true, |x, y, _, h| (y, h - 1 - x)),
        ("transverse", true, |x, y, w, h| (w - 1 - y, h - 1 - x)),
        ("rotate 90 counter-clockwise", true, |x, y, w, _| (w - 1 - y, x)),
    ];
    maps.into_iter()
        .map(|(name, swap, map)| {
            let (ow, oh) = if swap { (h, w) } else { (w, h) };
            let mut out = Vec::with_capacity(rgb.len());
            for y in 0..oh {
                for x in 0..ow {
                    let (sx, sy) = map(x, y, w, h);
                    out.extend_from_slice(at(sx, sy));
                }
            }
            (name, ow as u32, oh as u32, out)
        })
        .collect()
}

fn max_abs_diff(a: &[u8], b: &[u8]) -> u8 {
    a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap()
}

#[test]
fn orientation_6_decodes_as_pillow_exif_transpose_shows_it() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("orientation6_pillow.json")).unwrap()).unwrap();
    let (gw, gh, shown) = golden_image(&golden, "transposed");
    let (sw, sh, stored) = golden_image(&golden, "stored");
    assert_eq!((sw, sh), (16, 8), "the fixture is stored landscape");

    let img = ImageU8::open(&fixture("orientation6.jpg")).unwrap();
    assert_eq!((img.width, img.height, img.channels), (gw, gh, 3), "orientation 6 swaps the sides");
    // Different JPEG decoders (zune-jpeg here, libjpeg-turbo in Pillow) may differ by a level or two
    // on flat quality-100 4:4:4 blocks; the quadrant colours differ by more than 100 levels.
    const TOLERANCE: u8 = 4;
    let diff = max_abs_diff(&img.data, &shown);
    assert!(diff <= TOLERANCE, "max difference to Pillow's exif_transpose: {diff}");

    // The check discriminates: of the 8 ways to orient the stored pixels, only Pillow's (a 90°
    // clockwise rotation) is within the tolerance of what we decode.
    let matches: Vec<&str> = all_orientations(sw, sh, &stored)
        .into_iter()
        .filter(|(_, w, h, rgb)| {
            (*w, *h) == (img.width, img.height) && max_abs_diff(rgb, &img.data) <= TOLERANCE
        })
        .map(|(name, ..)| name)
        .collect();
    assert_eq!(matches, vec!["rotate 90 clockwise"]);
}

#[test]
fn images_without_exif_are_decoded_as_stored() {
    // The PNG fixtures carry no EXIF: the same pixels as a plain decode.
    let png = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad/ok.png");
    let img = ImageU8::open(&png).unwrap();
    let reference = image::open(&png).unwrap();
    assert_eq!((img.width, img.height), (reference.width(), reference.height()));
    assert_eq!(img.data, reference.to_rgb8().into_raw());
}
