//! `csv:` — a generic manifest.
//!
//! Columns: `path` (required; relative to `images=DIR` or to the CSV's folder), and either `label`
//! (one class per row: a class name, or an integer index) or one `label_<name>` column per label
//! (multilabel cells 1/0/−1/blank, read with the `policy`/`blank` options as CheXpert). Optional:
//! `id` (default: the `path` value), `split` (train / val|valid|calibration / test: official splits),
//! `age`, `sex`, `quality`, `site`; every other column is kept in [`crate::Metadata::extra`].
//!
//! Class names for `label`: the `classes=a,b,c` option fixes them and their order; otherwise, when
//! every value is a non-negative integer the classes are `0..=max`, else the sorted distinct values.
//! `task=ordinal` requires integer labels (grades); `task=multilabel` requires `label_<name>` columns.

use super::table::{Table, check_image_exists, parse_label_cell, parse_optional_f64, parse_sex};
use super::{LoadOptions, SampleCollector, label_rules};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const KNOWN: [&str; 8] = ["path", "id", "label", "split", "age", "sex", "quality", "site"];

/// Reads a generic CSV manifest.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let path = spec.path();
    let table = Table::read(&path)?;
    let base = match spec.option("images") {
        Some(dir) => PathBuf::from(dir),
        None => path.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let path_col = table.require("path")?;
    let id_col = table.find("id");
    let label_col = table.find("label");
    let multi_cols: Vec<(usize, String)> = table
        .headers
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.strip_prefix("label_").map(|n| (i, n.to_string())))
        .collect();
    let kind = match (spec.option("task"), label_col.is_some(), multi_cols.is_empty()) {
        (_, true, false) => {
            return Err(DataError::file(
                &path,
                "has both a `label` column and `label_<name>` columns; use one",
            ));
        }
        (_, false, true) => {
            return Err(DataError::file(
                &path,
                format!(
                    "missing required column `label` (or `label_<name>` columns) (header: {})",
                    table.headers.join(",")
                ),
            ));
        }
        (None | Some("multiclass"), true, true) => TaskKind::Multiclass,
        (Some("ordinal"), true, true) => TaskKind::Ordinal,
        (None | Some("multilabel"), false, false) => TaskKind::Multilabel,
        (Some(t), _, _) => {
            return Err(spec.error(format!(
                "task `{t}` does not fit the label columns (multiclass/ordinal need `label`, multilabel needs `label_<name>`)"
            )));
        }
    };
    let rules = label_rules(spec)?;
    let names: Vec<String> = match kind {
        TaskKind::Multilabel => multi_cols.iter().map(|(_, n)| n.clone()).collect(),
        _ => class_names(&table, label_col.expect("checked"), spec, kind)?,
    };
    let extra_cols: Vec<usize> = (0..table.headers.len())
        .filter(|i| !KNOWN.contains(&table.headers[*i].as_str()) && !table.headers[*i].starts_with("label_"))
        .collect();
    let col = |name: &str| table.find(name);
    let (split_col, age_col, sex_col, quality_col, site_col) =
        (col("split"), col("age"), col("sex"), col("quality"), col("site"));

    let mut skipped = Vec::new();
    let mut collector = SampleCollector::new();
    for (line, record) in &table.rows {
        let line = *line;
        let cell = |i: usize| record.get(i).unwrap_or("").trim();
        let rel = cell(path_col);
        if rel.is_empty() {
            return Err(table.error(line, "column `path` is empty"));
        }
        let target = match kind {
            TaskKind::Multilabel => Target::Labels(
                multi_cols
                    .iter()
                    .map(|(i, n)| {
                        parse_label_cell(cell(*i), rules)
                            .map_err(|m| table.error(line, format!("column `label_{n}`: {m}")))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            _ => Target::Class(class_index(cell(label_col.expect("checked")), &names).ok_or_else(|| {
                table.error(
                    line,
                    format!(
                        "unknown label value `{}`; classes are {}",
                        cell(label_col.expect("checked")),
                        names.join(", ")
                    ),
                )
            })?),
        };
        let official_split = match split_col.map(cell) {
            None | Some("") => None,
            Some(v) => Some(Split::parse(v).ok_or_else(|| {
                table
                    .error(line, format!("column `split`: `{v}` is not train, val/valid/calibration or test"))
            })?),
        };
        let num = |c: Option<usize>, name: &str| -> Result<Option<f64>, DataError> {
            c.map_or(Ok(None), |i| parse_optional_f64(cell(i), name).map_err(|m| table.error(line, m)))
        };
        let metadata = Metadata {
            age: num(age_col, "age")?,
            sex: sex_col.and_then(|i| parse_sex(cell(i))),
            quality: num(quality_col, "quality")?,
            site: site_col.map(cell).filter(|s| !s.is_empty()).map(str::to_string),
            extra: extra_cols
                .iter()
                .filter(|&&i| !cell(i).is_empty())
                .map(|&i| (table.headers[i].clone(), cell(i).to_string()))
                .collect(),
        };
        let image = base.join(rel);
        if !check_image_exists(&image, &path, line, options.on_bad_image, &mut skipped)? {
            continue;
        }
        let id = id_col.map(cell).filter(|s| !s.is_empty()).unwrap_or(rel).to_string();
        collector.push(
            Sample { id, image: ImageSource::File(image), target, metadata, official_split },
            &path,
            line,
        )?;
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace { kind, names },
        samples: collector.into_samples(),
        skipped,
        on_bad_image: options.on_bad_image,
    })
}

/// The class names of a single-label column (see the module docs).
fn class_names(
    table: &Table,
    col: usize,
    spec: &DatasetSpec,
    kind: TaskKind,
) -> Result<Vec<String>, DataError> {
    if let Some(list) = spec.option("classes") {
        let names: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
        if names.iter().any(String::is_empty) {
            return Err(spec.error("option `classes` has an empty class name"));
        }
        return Ok(names);
    }
    let values: BTreeSet<&str> = table.rows.iter().map(|(_, r)| r.get(col).unwrap_or("").trim()).collect();
    let ints: Option<Vec<usize>> = values.iter().map(|v| v.parse::<usize>().ok()).collect();
    match ints {
        Some(ints) if !ints.is_empty() => {
            Ok((0..=*ints.iter().max().expect("non-empty")).map(|i| i.to_string()).collect())
        }
        _ if kind == TaskKind::Ordinal => Err(DataError::file(
            &table.path,
            "task=ordinal needs integer grades (0, 1, 2, ...) in column `label`, or a `classes=` option",
        )),
        _ => Ok(values.into_iter().filter(|v| !v.is_empty()).map(str::to_string).collect()),
    }
}

/// A label cell as a class index: the position of the name, or an integer index in range.
fn class_index(value: &str, names: &[String]) -> Option<usize> {
    names.iter().position(|n| n == value).or_else(|| value.parse::<usize>().ok().filter(|&i| i < names.len()))
}
