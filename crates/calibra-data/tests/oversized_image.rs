//! Issue 20 defect 4: a PNG of a few dozen bytes whose header claims 100000 × 100000 pixels aborted the
//! process with an allocation failure (exit 134), even under `--on-bad-image skip`. Now it is a bad
//! image like any other: a decode error naming the file, skipped under the skip policy. The PNG is made
//! here (valid chunk CRCs, an empty deflate stream), so no fixture file is needed.

use calibra_data::pixels::{MAX_IMAGE_BYTES, MAX_IMAGE_SIDE};
use calibra_data::{BadImagePolicy, DatasetSpec, ImageU8, LoadOptions, decode_samples, load_dataset};

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

/// A PNG whose header claims `width` × `height` 8-bit RGB pixels and whose data is one empty zlib stream.
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(&mut png, b"IEND", &[]);
    png
}

#[test]
fn the_generator_makes_a_png_the_decoder_reads_the_header_of() {
    // A small claimed size gets past the header to the (missing) pixels: a data error, not a size one.
    let err = ImageU8::decode(&png_claiming(4, 4), "small.png").unwrap_err().to_string();
    assert!(!err.contains("limit"), "{err}");
    assert_eq!(&png_claiming(4, 4)[12..16], b"IHDR");
}

#[test]
fn a_header_claiming_a_huge_size_is_a_decode_error_naming_the_file() {
    let png = png_claiming(100_000, 100_000);
    assert!(png.len() < 100, "{} bytes", png.len());
    let err = ImageU8::decode(&png, "huge.png").unwrap_err().to_string();
    assert!(err.contains("huge.png") && err.contains("100000 × 100000"), "{err}");
    assert!(err.contains(&format!("limit of {MAX_IMAGE_SIDE} pixels per side")), "{err}");
    // Within the side limit, above the byte limit (20000 × 20000 × 3 = 1.2 GB > 1 GiB).
    assert!(3 * u64::from(MAX_IMAGE_SIDE).pow(2) > MAX_IMAGE_BYTES);
    let err =
        ImageU8::decode(&png_claiming(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE), "big.png").unwrap_err().to_string();
    assert!(err.contains("1200000000 bytes decoded"), "{err}");
}

#[test]
fn an_oversized_image_is_skipped_under_skip_and_named_under_fail() {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bad/ok.png")).unwrap();
    std::fs::write(dir.path().join("ok.png"), ok).unwrap();
    std::fs::write(dir.path().join("huge.png"), png_claiming(100_000, 100_000)).unwrap();
    let csv = dir.path().join("data.csv");
    std::fs::write(&csv, "id,path,label\none,ok.png,a\ntwo,huge.png,b\nthree,ok.png,b\n").unwrap();
    let spec = DatasetSpec::parse(&format!("csv:{}", csv.display())).unwrap();
    let ds = load_dataset(&spec, &LoadOptions { on_bad_image: BadImagePolicy::Skip }).unwrap();
    let all: Vec<usize> = (0..ds.len()).collect();
    let d = decode_samples(&ds, &all, BadImagePolicy::Skip, |_, i| Ok(i.width)).unwrap();
    assert_eq!(d.items.len(), 2);
    assert_eq!(d.skipped.len(), 1);
    assert!(d.skipped[0].location.contains("two"), "{:?}", d.skipped[0]);
    assert!(d.skipped[0].reason.contains("100000 × 100000"), "{:?}", d.skipped[0]);
    let e = decode_samples(&ds, &all, BadImagePolicy::Fail, |_, i| Ok(i.width)).unwrap_err().to_string();
    assert!(e.contains("huge.png") && e.contains("limit"), "{e}");
}
