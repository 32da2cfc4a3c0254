//! Fuzzing without nightly (issue 20): the CSV manifest readers (generic `csv:`, `aptos2019:`,
//! `isic2019:` ground truth and metadata) on arbitrary bytes and on mutated valid manifests load a
//! dataset or return an error, never panic or hang. Images referenced by a manifest exist
//! (`ok.png`) or not (the skip policy records them). CI-sized case counts: each case writes a file
//! (`PROPTEST_CASES=N` or `CALIBRA_FUZZ_SCALE=K` runs more; see calibra-testkit).

use calibra_data::{BadImagePolicy, DatasetSpec, LoadOptions, load_dataset};
use calibra_testkit::{apply_edits, byte_edit, fuzz_config};
use proptest::prelude::*;
use std::path::Path;

/// Bytes that matter to this format, drawn more often than chance would.
const INTERESTING: &[u8] = b",\n\r\"-.0123456789 _/\xef\xbb\xbf";

/// (spec format, manifest file name inside the root, a valid manifest).
const FORMATS: &[(&str, &str, &str)] = &[
    ("csv", "data.csv", "id,path,label,age,sex\na,ok.png,x,40,F\nb,ok.png,y,,M\nc,gone.png,x,55,\n"),
    ("csv", "data.csv", "id,path,label_a,label_b\na,ok.png,1,0\nb,ok.png,,1\n"),
    ("aptos2019", "train.csv", "id_code,diagnosis\nok,0\nok2,4\n"),
    (
        "isic2019",
        "ISIC_2019_Training_GroundTruth.csv",
        "image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK\nok,1.0,0,0,0,0,0,0,0,0\nok2,0,1.0,0,0,0,0,0,0,0\n",
    ),
];

fn load(root: &Path, format: &str, manifest: &str, bytes: &[u8]) {
    let ok = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bad/ok.png")).unwrap();
    for sub in ["", "train_images", "ISIC_2019_Training_Input"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    for p in ["ok.png", "train_images/ok.png", "ISIC_2019_Training_Input/ok.jpg"] {
        std::fs::write(root.join(p), &ok).unwrap();
    }
    std::fs::write(root.join(manifest), bytes).unwrap();
    let location = if format == "csv" { root.join(manifest) } else { root.to_path_buf() };
    let spec = DatasetSpec::parse(&format!("{format}:{}", location.display())).unwrap();
    for policy in [BadImagePolicy::Skip, BadImagePolicy::Fail] {
        let _ = load_dataset(&spec, &LoadOptions { on_bad_image: policy });
    }
}

proptest! {
    #![proptest_config(fuzz_config(128))]

    #[test]
    fn arbitrary_bytes_never_panic(which in 0..FORMATS.len(), bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        let (format, manifest, _) = FORMATS[which];
        load(dir.path(), format, manifest, &bytes);
    }

    #[test]
    fn mutated_manifests_never_panic(which in 0..FORMATS.len(), edits in prop::collection::vec(byte_edit(INTERESTING), 1..8)) {
        let dir = tempfile::tempdir().unwrap();
        let (format, manifest, valid) = FORMATS[which];
        load(dir.path(), format, manifest, &apply_edits(valid.as_bytes().to_vec(), &edits));
    }
}

#[test]
fn the_seed_manifests_load() {
    for (format, manifest, valid) in FORMATS {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), format, manifest, valid.as_bytes());
        let location = if *format == "csv" { dir.path().join(manifest) } else { dir.path().to_path_buf() };
        let spec = DatasetSpec::parse(&format!("{format}:{}", location.display())).unwrap();
        let ds = load_dataset(&spec, &LoadOptions { on_bad_image: BadImagePolicy::Skip })
            .unwrap_or_else(|e| panic!("{format}: {e}"));
        assert!(!ds.is_empty(), "{format}");
    }
}
