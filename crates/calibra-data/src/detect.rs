//! Bare-path dataset specs: the format of a path given without `FORMAT:` is detected from what is on
//! disk. Detection only looks at names and CSV header lines; it never reads images.
//!
//! | what the path is | detected as |
//! |---|---|
//! | a `.npz` file | `medmnist:` that file |
//! | `ISIC_2019_Training_GroundTruth.csv`, or a folder holding it | `isic2019:` the folder |
//! | a `train.csv` with `id_code` and `diagnosis` columns, or a folder holding one | `aptos2019:` the folder |
//! | a CSV with `Path` and the CheXpert observation columns (`No Finding`, …), or a folder whose `train.csv` is one | `chexpert:` that CSV / folder |
//! | `mimic-cxr-2.0.0-chexpert.csv[.gz]`, or a folder holding it | `mimic-cxr:` the folder |
//! | a folder of class folders with `.png`/`.jpg`/`.jpeg` images (directly or under `train/`, `val/`, `test/`) | `imagefolder:` the folder |
//!
//! A path that matches several rows is ambiguous: the error lists the candidates and asks for an explicit
//! `FORMAT:PATH`. A path that matches none is an error saying what was looked for.

use std::path::{Path, PathBuf};

use crate::error::DataError;
use crate::readers::isic::GROUND_TRUTH as ISIC_GROUND_TRUTH;
use crate::spec::DatasetFormat;

const MIMIC_LABELS: &str = "mimic-cxr-2.0.0-chexpert.csv";

/// What detection found: the format, the location to read and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub format: DatasetFormat,
    pub location: PathBuf,
    /// e.g. `train.csv has id_code and diagnosis columns`.
    pub reason: String,
}

/// The header cells of a CSV's first line (empty when unreadable).
fn header(path: &Path) -> Vec<String> {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    let mut line = String::new();
    if std::io::BufReader::new(file).read_line(&mut line).is_err() {
        return Vec::new();
    }
    line.trim_end()
        .trim_start_matches('\u{feff}')
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect()
}

fn is_aptos(h: &[String]) -> bool {
    h.iter().any(|c| c == "id_code") && h.iter().any(|c| c == "diagnosis")
}

fn is_chexpert(h: &[String]) -> bool {
    h.iter().any(|c| c == "Path") && h.iter().any(|c| c == "No Finding")
}

fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "png" | "jpg" | "jpeg"))
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// A class folder holding at least one image directly.
fn has_class_images(dir: &Path) -> bool {
    subdirs(dir).iter().any(|class| {
        std::fs::read_dir(class)
            .map(|r| r.filter_map(|e| e.ok()).any(|e| e.path().is_file() && is_image(&e.path())))
            .unwrap_or(false)
    })
}

/// The candidates for `path` (see the module docs), in table order.
pub fn candidates(path: &Path) -> Vec<Detected> {
    let d = |format, location: &Path, reason: String| Detected {
        format,
        location: location.to_path_buf(),
        reason,
    };
    let mut out = Vec::new();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if path.is_file() {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".npz") {
            out.push(d(DatasetFormat::MedMnist, path, "a .npz file".into()));
        }
        if name == ISIC_GROUND_TRUTH {
            out.push(d(DatasetFormat::Isic2019, parent, format!("the file is {ISIC_GROUND_TRUTH}")));
        }
        if lower.ends_with(".csv") || lower.ends_with(".csv.gz") {
            let h = if lower.ends_with(".csv") { header(path) } else { Vec::new() };
            if name == "train.csv" && is_aptos(&h) {
                out.push(d(
                    DatasetFormat::Aptos2019,
                    parent,
                    "train.csv has id_code and diagnosis columns".into(),
                ));
            }
            if is_chexpert(&h) {
                out.push(d(DatasetFormat::CheXpert, path, format!("{name} has Path and No Finding columns")));
            }
            if name == MIMIC_LABELS || name == format!("{MIMIC_LABELS}.gz") {
                out.push(d(DatasetFormat::MimicCxr, parent, format!("the file is {name}")));
            }
        }
    } else if path.is_dir() {
        if path.join(ISIC_GROUND_TRUTH).is_file() {
            out.push(d(DatasetFormat::Isic2019, path, format!("it holds {ISIC_GROUND_TRUTH}")));
        }
        let train = path.join("train.csv");
        if train.is_file() {
            let h = header(&train);
            if is_aptos(&h) {
                out.push(d(
                    DatasetFormat::Aptos2019,
                    path,
                    "its train.csv has id_code and diagnosis columns".into(),
                ));
            }
            if is_chexpert(&h) {
                out.push(d(
                    DatasetFormat::CheXpert,
                    path,
                    "its train.csv has Path and No Finding columns".into(),
                ));
            }
        }
        if path.join(MIMIC_LABELS).is_file() || path.join(format!("{MIMIC_LABELS}.gz")).is_file() {
            out.push(d(DatasetFormat::MimicCxr, path, format!("it holds {MIMIC_LABELS}[.gz]")));
        }
        let split_dirs: Vec<PathBuf> =
            ["train", "val", "test"].iter().map(|s| path.join(s)).filter(|p| p.is_dir()).collect();
        if !split_dirs.is_empty() && split_dirs.iter().any(|s| has_class_images(s)) {
            out.push(d(
                DatasetFormat::ImageFolder,
                path,
                "train/val/test folders of class folders with images".into(),
            ));
        } else if has_class_images(path) {
            out.push(d(DatasetFormat::ImageFolder, path, "class folders with .png/.jpg/.jpeg images".into()));
        }
    }
    out
}

/// The one format of a bare path, or an error naming the path and the candidates (none: what was
/// looked for; several: each with its reason, and the explicit spelling to choose one).
pub fn detect(raw: &str) -> Result<Detected, DataError> {
    let path = Path::new(raw);
    let err = |message: String| DataError::Spec { spec: raw.to_string(), message };
    if !path.exists() {
        return Err(err(format!(
            "no such file or folder; a dataset is FORMAT:LOCATION with FORMAT one of {}, or an existing path \
             whose format is detected",
            DatasetFormat::ALL.map(|f| f.name()).join(", ")
        )));
    }
    let mut found = candidates(path);
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(err(
            "cannot detect the dataset format: not a MedMNIST .npz, an ISIC 2019 ground-truth CSV, an APTOS \
             train.csv, a CheXpert CSV, a MIMIC-CXR folder or an image folder of class folders; write \
             FORMAT:PATH (e.g. csv:PATH for a generic manifest)"
                .into(),
        )),
        _ => Err(err(format!(
            "ambiguous dataset path: it could be {}; write one of {} to choose",
            found
                .iter()
                .map(|c| format!("{} ({})", c.format.name(), c.reason))
                .collect::<Vec<_>>()
                .join(", or "),
            found
                .iter()
                .map(|c| format!("`{}:{}`", c.format.name(), c.location.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn each_format_is_detected_from_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let isic = root.join("isic");
        write(&isic.join(ISIC_GROUND_TRUTH), "image,MEL,NV\n");
        let aptos = root.join("aptos");
        write(&aptos.join("train.csv"), "id_code,diagnosis\n");
        let chex = root.join("chexpert");
        write(&chex.join("train.csv"), "Path,Sex,Age,No Finding,Edema\n");
        let mimic = root.join("mimic");
        write(&mimic.join(format!("{MIMIC_LABELS}.gz")), "");
        let npz = root.join("bloodmnist.npz");
        write(&npz, "");
        let folder = root.join("folder");
        write(&folder.join("cat/a.png"), "");
        let split_folder = root.join("splits");
        write(&split_folder.join("train/cat/a.JPG"), "");
        let cases: [(&Path, DatasetFormat, &Path); 9] = [
            (&isic, DatasetFormat::Isic2019, &isic),
            (&isic.join(ISIC_GROUND_TRUTH), DatasetFormat::Isic2019, &isic),
            (&aptos, DatasetFormat::Aptos2019, &aptos),
            (&aptos.join("train.csv"), DatasetFormat::Aptos2019, &aptos),
            (&chex.join("train.csv"), DatasetFormat::CheXpert, &chex.join("train.csv")),
            (&mimic, DatasetFormat::MimicCxr, &mimic),
            (&npz, DatasetFormat::MedMnist, &npz),
            (&folder, DatasetFormat::ImageFolder, &folder),
            (&split_folder, DatasetFormat::ImageFolder, &split_folder),
        ];
        for (path, format, location) in cases {
            let d = detect(path.to_str().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!((d.format, d.location.as_path()), (format, location), "{}", path.display());
        }
        assert_eq!(detect(chex.to_str().unwrap()).unwrap().format, DatasetFormat::CheXpert);
    }

    #[test]
    fn an_ambiguous_path_lists_its_candidates_and_an_unknown_one_says_what_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let both = dir.path().join("both");
        write(&both.join(ISIC_GROUND_TRUTH), "image,MEL\n");
        write(&both.join("MEL/ISIC_0000.jpg"), "");
        let e = detect(both.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("isic2019 (") && e.contains("imagefolder ("), "{e}");
        assert!(e.contains(&format!("`isic2019:{}`", both.display())), "{e}");
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let e = detect(empty.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("cannot detect") && e.contains("FORMAT:PATH"), "{e}");
        let e = detect(dir.path().join("absent").to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("no such file or folder"), "{e}");
    }
}
