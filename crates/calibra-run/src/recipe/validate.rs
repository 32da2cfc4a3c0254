//! Recipe validation beyond the schema: one function per recipe section, each reporting every
//! problem it finds with the key path at fault (the caller turns them into errors with line numbers).
//! The sections run in file order (top-level lists, encoders, datasets, perturbations, split,
//! regimes, losses, evaluator, cost), so the problems are listed in that order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use calibra_crs::Regime;

use super::{
    CoopRegime, DatasetEntry, EncoderEntry, HEAD_INITS, LossEntry, MVC_BENCH_TEMPLATE_COUNT, Recipe,
    RegimeScope, ValidationOptions, mvc_bench_index,
};
use crate::descriptions::DescriptionsSetting;
use crate::locate::KeyPath;
use crate::names;

/// One validation problem: the key path and the message.
pub(super) struct Problem {
    pub(super) path: KeyPath,
    pub(super) message: String,
}

/// The regimes whose runs may define the evaluator's axes (`[evaluator] regime`): every regime of
/// fits (estimates are predictions about fits, not fits).
const EVALUATED_REGIMES: [Regime; 5] =
    [Regime::Frozen, Regime::Lora, Regime::Coop, Regime::Full, Regime::ZeroShot];

/// Where a section reports a problem.
type Sink<'a> = dyn FnMut(KeyPath, String) + 'a;

impl Recipe {
    /// Every problem of the recipe, section by section.
    pub(super) fn problems(&self, options: ValidationOptions) -> Vec<Problem> {
        let mut out = Vec::new();
        let problem: &mut Sink<'_> = &mut |path, message| out.push(Problem { path, message });
        self.top_level_problems(problem);
        self.encoder_problems(problem, options);
        if options.check_paths {
            crate::encoder_check::check_encoders(
                self,
                crate::encoder_check::hf_hub_cache().as_deref(),
                problem,
            );
        }
        self.dataset_problems(problem, options);
        self.encoder_dataset_problems(problem);
        self.perturbation_problems(problem);
        self.split_problems(problem);
        self.regime_problems(problem, options);
        self.loss_problems(problem);
        self.evaluator_problems(problem, options);
        self.cost_problems(problem);
        self.runtime_problems(problem);
        out
    }

    /// `seeds`, `label_fractions`, `calibrators`.
    fn top_level_problems(&self, problem: &mut Sink<'_>) {
        let root = KeyPath::root();
        non_empty_distinct(problem, &root.key("seeds"), &self.seeds);
        check_fractions(problem, &root.key("label_fractions"), &self.label_fractions, "label fraction");
        check_calibrators(problem, &root.key("calibrators"), &self.calibrators);
    }

    /// `[[encoders]]`: at least one, distinct non-empty names, sources that are hub ids or (with
    /// `check_paths`) existing checkpoint directories.
    fn encoder_problems(&self, problem: &mut Sink<'_>, options: ValidationOptions) {
        let root = KeyPath::root();
        if self.encoders.is_empty() {
            problem(root.key("encoders"), "at least one [[encoders]] entry is required".into());
        }
        let mut seen = BTreeMap::new();
        for (i, e) in self.encoders.iter().enumerate() {
            let at = root.key("encoders").index(i);
            let name = e.display_name();
            if name.trim().is_empty() {
                problem(at.key("name"), "the encoder name is empty".into());
            }
            if let Some(first) = seen.insert(name.clone(), i) {
                problem(at.key("name"), format!("encoder name `{name}` is also used by encoders[{first}]"));
            }
            if e.is_hub_id() {
                let id = &e.source[3..];
                if id.is_empty() || id.contains(char::is_whitespace) {
                    problem(
                        at.key("source"),
                        format!("`{}` is not a Hugging Face id (hf:org/model)", e.source),
                    );
                }
            } else if e.source.trim().is_empty() {
                problem(at.key("source"), "the encoder source is empty".into());
            } else if options.check_paths && Path::new(&e.source).is_file() {
                problem(
                    at.key("source"),
                    format!(
                        "local encoder `{}` is a file; an encoder is a checkpoint directory holding \
                         config.json and model.safetensors (Hugging Face layout)",
                        e.source
                    ),
                );
            } else if options.check_paths && !Path::new(&e.source).exists() {
                problem(
                    at.key("source"),
                    format!(
                        "local encoder `{}` does not exist (relative paths are resolved against the \
                         working directory; use `hf:org/model` for a hub id, or --no-check-paths)",
                        e.source
                    ),
                );
            }
        }
    }

    /// `[[datasets]]`: at least one, valid specs, distinct names, calibrators that suit the task,
    /// distinct shift targets with valid specs.
    fn dataset_problems(&self, problem: &mut Sink<'_>, options: ValidationOptions) {
        let root = KeyPath::root();
        if self.datasets.is_empty() {
            problem(root.key("datasets"), "at least one [[datasets]] entry is required".into());
        }
        let mut seen = BTreeMap::new();
        for (i, d) in self.datasets.iter().enumerate() {
            let at = root.key("datasets").index(i);
            check_spec(problem, &at.key("spec"), &d.spec, options);
            let name = d.display_name();
            if let Some(first) = seen.insert(name.clone(), i) {
                problem(at.key("name"), format!("dataset name `{name}` is also used by datasets[{first}]"));
            }
            if let Some(list) = &d.calibrators {
                check_calibrators(problem, &at.key("calibrators"), list);
            }
            check_calibrators_fit_task(problem, &root, i, d, self.calibrators_for(d));
            let mut targets = BTreeSet::new();
            for (j, s) in d.shift.iter().enumerate() {
                check_spec(problem, &at.key("shift").index(j).key("spec"), &s.spec, options);
                if !targets.insert(s.display_name()) {
                    problem(
                        at.key("shift").index(j),
                        format!("shift target `{}` is listed twice for this dataset", s.display_name()),
                    );
                }
            }
        }
    }

    /// `[[encoders]] datasets`: distinct names of this recipe's datasets.
    fn encoder_dataset_problems(&self, problem: &mut Sink<'_>) {
        let root = KeyPath::root();
        let dataset_names: BTreeSet<String> = self.datasets.iter().map(DatasetEntry::display_name).collect();
        for (i, e) in self.encoders.iter().enumerate() {
            let Some(list) = &e.datasets else { continue };
            let at = root.key("encoders").index(i).key("datasets");
            non_empty_distinct(problem, &at, list);
            for (j, name) in list.iter().enumerate() {
                if !dataset_names.contains(name) {
                    problem(
                        at.index(j),
                        format!(
                            "`{name}` is not a dataset of this recipe; expected one of {}",
                            dataset_names.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
            }
        }
    }

    /// `[perturbations]`: known names, severities in range, label fractions.
    fn perturbation_problems(&self, problem: &mut Sink<'_>) {
        let Some(p) = &self.perturbations else { return };
        let at = KeyPath::root().key("perturbations");
        non_empty_distinct(problem, &at.key("names"), &p.names);
        for (i, n) in p.names.iter().enumerate() {
            if calibra_data::Perturbation::parse(n).is_none() {
                problem(
                    at.key("names").index(i),
                    format!(
                        "unknown perturbation `{n}`; expected one of {}",
                        names::perturbations().join(", ")
                    ),
                );
            }
        }
        if let Some(f) = &p.label_fractions {
            check_fractions(problem, &at.key("label_fractions"), f, "label fraction");
        }
        non_empty_distinct(problem, &at.key("severities"), &p.severities);
        for (i, s) in p.severities.iter().enumerate() {
            if !(1..=names::MAX_SEVERITY).contains(s) {
                problem(
                    at.key("severities").index(i),
                    format!("severity {s} is outside 1..={}", names::MAX_SEVERITY),
                );
            }
        }
    }

    /// `[split]`: proportions in [0, 1], positive train and test, summing to 1.
    fn split_problems(&self, problem: &mut Sink<'_>) {
        let Some(s) = &self.split else { return };
        let at = KeyPath::root().key("split");
        for (key, v) in [("train", s.train), ("calibration", s.calibration), ("test", s.test)] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                problem(at.key(key), format!("{v} is not a proportion in [0, 1]"));
            }
        }
        if s.train <= 0.0 || s.test <= 0.0 {
            problem(at.clone(), "train and test proportions must be positive".into());
        }
        let total = s.train + s.calibration + s.test;
        if (total - 1.0).abs() > 1e-9 {
            problem(at, format!("train + calibration + test = {total}, expected 1"));
        }
    }

    /// `[regimes]`: at least one, then each regime's own table.
    fn regime_problems(&self, problem: &mut Sink<'_>, options: ValidationOptions) {
        let r = &self.regimes;
        if r.frozen.is_none()
            && r.lora.is_none()
            && r.coop.is_none()
            && r.full.is_none()
            && r.zero_shot.is_none()
            && r.estimate.is_none()
        {
            problem(
                KeyPath::root().key("regimes"),
                "at least one regime is required: [regimes.frozen], .lora, .coop, .full, .zero-shot or \
                 .estimate"
                    .into(),
            );
        }
        self.frozen_problems(problem);
        self.lora_problems(problem);
        self.coop_problems(problem, options);
        self.full_problems(problem);
        self.zero_shot_problems(problem);
        self.estimate_problems(problem);
    }

    /// A trained regime's `encoders` and `label_fractions` filters.
    fn scope_problems(&self, problem: &mut Sink<'_>, at: &KeyPath, scope: RegimeScope<'_>) {
        let encoder_names: BTreeSet<String> = self.encoders.iter().map(EncoderEntry::display_name).collect();
        check_scope_encoders(problem, at, scope.encoders, &encoder_names);
        if let Some(f) = scope.label_fractions {
            check_fractions(problem, &at.key("label_fractions"), f, "label fraction");
        }
    }

    /// `[regimes.frozen]`: known probes, layer fractions.
    fn frozen_problems(&self, problem: &mut Sink<'_>) {
        let Some(f) = &self.regimes.frozen else { return };
        let at = KeyPath::root().key("regimes").key("frozen");
        non_empty_distinct(problem, &at.key("probes"), &f.probes);
        for (i, p) in f.probes.iter().enumerate() {
            if !names::is_known(names::PROBES, p) {
                problem(
                    at.key("probes").index(i),
                    format!("unknown probe `{p}`; expected one of {}", names::PROBES.join(", ")),
                );
            }
        }
        check_fractions(problem, &at.key("layers"), &f.layers, "layer fraction");
        self.scope_problems(problem, &at, f.scope());
    }

    /// `[regimes.lora]`: rank, alpha, lr, dropout, epochs, head options, known targets.
    fn lora_problems(&self, problem: &mut Sink<'_>) {
        let Some(l) = &self.regimes.lora else { return };
        let at = KeyPath::root().key("regimes").key("lora");
        if l.r == 0 {
            problem(at.key("r"), "the LoRA rank must be >= 1".into());
        }
        positive(problem, &at.key("alpha"), l.alpha);
        positive(problem, &at.key("lr"), l.lr);
        if !(l.dropout.is_finite() && (0.0..1.0).contains(&l.dropout)) {
            problem(at.key("dropout"), format!("{} is not a dropout probability in [0, 1)", l.dropout));
        }
        if l.epochs == 0 {
            problem(at.key("epochs"), "epochs must be >= 1".into());
        }
        adapted_options(
            problem,
            &at,
            l.head_init.as_deref(),
            l.early_stopping,
            (l.batch_size, l.accumulate),
            l.augment.as_deref(),
        );
        non_empty_distinct(problem, &at.key("targets"), &l.targets);
        for (i, t) in l.targets.iter().enumerate() {
            if !names::is_known(&names::lora_target_names(), t) {
                problem(
                    at.key("targets").index(i),
                    format!(
                        "unknown LoRA target `{t}`; expected one of {}",
                        names::lora_target_names().join(", ")
                    ),
                );
            }
        }
        self.scope_problems(problem, &at, l.scope());
    }

    /// `[regimes.coop]`: n_ctx, class position, epochs, lr, the methods' options, single-label
    /// datasets.
    fn coop_problems(&self, problem: &mut Sink<'_>, options: ValidationOptions) {
        let Some(c) = &self.regimes.coop else { return };
        let at = KeyPath::root().key("regimes").key("coop");
        if c.n_ctx == 0 {
            problem(at.key("n_ctx"), "n_ctx must be >= 1".into());
        }
        if !names::is_known(names::COOP_CLASS_POSITIONS, &c.class_position) {
            problem(
                at.key("class_position"),
                format!(
                    "unknown class position `{}`; expected one of {}",
                    c.class_position,
                    names::COOP_CLASS_POSITIONS.join(", ")
                ),
            );
        }
        if c.epochs == 0 {
            problem(at.key("epochs"), "epochs must be >= 1".into());
        }
        positive(problem, &at.key("lr"), c.lr);
        self.coop_method_problems(problem, &at, c);
        self.coop_descriptions_problems(problem, &at, c, options);
        self.scope_problems(problem, &at, c.scope());
        check_single_label_datasets(problem, &at, "CoOp", c.datasets.as_deref(), &self.datasets);
    }

    /// `[regimes.coop] hicropl_descriptions`: only with method `hicropl`; each file readable (see
    /// [`descriptions_file_problems`]); a table names exactly the datasets HiCroPL trains on, no
    /// fewer (a fit would have no file) and no others (a file nothing reads).
    fn coop_descriptions_problems(
        &self,
        problem: &mut Sink<'_>,
        at: &KeyPath,
        c: &CoopRegime,
        options: ValidationOptions,
    ) {
        let Some(setting) = &c.hicropl_descriptions else { return };
        let key = at.key("hicropl_descriptions");
        let methods = c.method_names();
        let hicropl = methods.iter().any(|m| m == "hicropl");
        if !hicropl {
            problem(
                key.clone(),
                format!(
                    "`hicropl_descriptions` applies to method `hicropl`, which `methods` does not list \
                     (methods: {})",
                    methods.join(", ")
                ),
            );
        }
        let table = match setting {
            DescriptionsSetting::OneFile(path) => {
                descriptions_file_problems(problem, key, path, options);
                return;
            }
            DescriptionsSetting::PerDataset(table) => table,
        };
        let recipe_datasets: Vec<String> = self.datasets.iter().map(DatasetEntry::display_name).collect();
        let in_scope = |name: &String| c.datasets.as_ref().is_none_or(|list| list.contains(name));
        for (dataset, path) in table {
            let entry = key.key(dataset);
            if !recipe_datasets.contains(dataset) {
                problem(
                    entry.clone(),
                    format!(
                        "`{dataset}` is not a dataset of this recipe; the table's keys are dataset names \
                         (expected one of {})",
                        recipe_datasets.join(", ")
                    ),
                );
            } else if !in_scope(dataset) {
                problem(
                    entry.clone(),
                    format!(
                        "HiCroPL does not train on dataset `{dataset}`: `[regimes.coop] datasets` leaves it \
                         out (datasets: {}); remove the entry or add the dataset there",
                        c.datasets.as_deref().unwrap_or_default().join(", ")
                    ),
                );
            }
            descriptions_file_problems(problem, entry, path, options);
        }
        if !hicropl {
            return;
        }
        // The datasets with HiCroPL fits, as `expand` makes them: in the regime's dataset scope and
        // covered by an encoder of its encoder scope.
        let named: Vec<&str> = table.keys().map(String::as_str).collect();
        let encoders_in_scope: Vec<&EncoderEntry> = self
            .encoders
            .iter()
            .filter(|e| c.encoders.as_ref().is_none_or(|list| list.contains(&e.display_name())))
            .collect();
        for dataset in recipe_datasets.iter().filter(|d| in_scope(d)) {
            let trained = encoders_in_scope
                .iter()
                .any(|e| e.datasets.as_ref().is_none_or(|list| list.contains(dataset)));
            if trained && !table.contains_key(dataset) {
                problem(
                    key.clone(),
                    format!(
                        "HiCroPL trains on dataset `{dataset}`, for which the table names no \
                         descriptions file (it names: {}); add `{dataset} = \"FILE\"`, or leave \
                         `{dataset}` out of `[regimes.coop] datasets`",
                        if named.is_empty() { "no dataset".to_string() } else { named.join(", ") }
                    ),
                );
            }
        }
    }

    /// `[regimes.coop]` `methods` and the methods' hyper-parameters: implemented methods, listed once;
    /// each hyper-parameter in range and only with its method; distinct record probes.
    fn coop_method_problems(&self, problem: &mut Sink<'_>, at: &KeyPath, c: &CoopRegime) {
        if let Some(list) = &c.methods {
            non_empty_distinct(problem, &at.key("methods"), list);
            for (i, m) in list.iter().enumerate() {
                if let Some(message) = names::coop_method_problem(m) {
                    problem(at.key("methods").index(i), message);
                }
            }
        }
        let methods = c.method_names();
        let listed = |name: &str| methods.iter().any(|m| m == name);
        let params = [
            ("kgcoop_lambda", c.kgcoop_lambda, "kgcoop", "KgCoOp's λ", false),
            ("prograd_lambda", c.prograd_lambda, "prograd", "ProGrad's λ", false),
            ("prograd_temperature", c.prograd_temperature, "prograd", "ProGrad's temperature", true),
            ("promptsrc_text_weight", c.promptsrc_text_weight, "promptsrc", "PromptSRC's text weight", false),
            (
                "promptsrc_image_weight",
                c.promptsrc_image_weight,
                "promptsrc",
                "PromptSRC's image weight",
                false,
            ),
            ("promptsrc_gpa_mean", c.promptsrc_gpa_mean, "promptsrc", "PromptSRC's aggregation mean", false),
            ("promptsrc_gpa_std", c.promptsrc_gpa_std, "promptsrc", "PromptSRC's aggregation std", true),
            ("hicropl_lambda", c.hicropl_lambda, "hicropl", "HiCroPL's λ", false),
            ("hicropl_adam_eps", c.hicropl_adam_eps, "hicropl", "HiCroPL's Adam epsilon", true),
        ];
        for (key, value, method, what, strictly_positive) in params {
            let Some(v) = value else { continue };
            let in_range = v.is_finite() && if strictly_positive { v > 0.0 } else { v >= 0.0 };
            if !in_range {
                let range = if strictly_positive { "a positive number" } else { "a finite number >= 0" };
                problem(at.key(key), format!("{what} {v} must be {range}"));
            }
            if !listed(method) {
                problem(
                    at.key(key),
                    format!(
                        "`{key}` applies to method `{method}`, which `methods` does not list (methods: {})",
                        methods.join(", ")
                    ),
                );
            }
        }
        if let Some(a) = c.augment.as_deref() {
            if !super::AUGMENTS.contains(&a) {
                problem(
                    at.key("augment"),
                    format!("unknown augment `{a}`; expected one of {}", super::AUGMENTS.join(", ")),
                );
            } else if a != "none"
                && !methods.iter().any(|m| names::IMAGE_PROMPT_METHODS.contains(&m.as_str()))
            {
                problem(
                    at.key("augment"),
                    format!(
                        "augment `{a}` applies to the methods that train on images ({}), which `methods` \
                         does not list (methods: {}); CoOp, KgCoOp and ProGrad train on cached image features",
                        names::IMAGE_PROMPT_METHODS.join(", "),
                        methods.join(", ")
                    ),
                );
            }
        }
        // HiCroPL maps text → vision below its cross layer and vision → text from it on: both
        // directions need a block, so its depth is at least 2.
        let counts = [
            ("maple_depth", c.maple_depth, "maple", "MaPLe's prompt depth", 1),
            ("maple_n_ctx", c.maple_n_ctx, "maple", "MaPLe's context tokens", 1),
            ("promptsrc_depth", c.promptsrc_depth, "promptsrc", "PromptSRC's prompt depth", 1),
            ("promptsrc_n_ctx", c.promptsrc_n_ctx, "promptsrc", "PromptSRC's context tokens", 1),
            ("hicropl_depth", c.hicropl_depth, "hicropl", "HiCroPL's prompt depth", 2),
            ("hicropl_n_ctx", c.hicropl_n_ctx, "hicropl", "HiCroPL's context tokens", 1),
            ("hicropl_cross_layer", c.hicropl_cross_layer, "hicropl", "HiCroPL's cross layer", 1),
        ];
        for (key, value, method, what, min) in counts {
            let Some(v) = value else { continue };
            if v < min {
                problem(at.key(key), format!("{what} must be >= {min}, got {v}"));
            }
            if !listed(method) {
                problem(
                    at.key(key),
                    format!(
                        "`{key}` applies to method `{method}`, which `methods` does not list (methods: {})",
                        methods.join(", ")
                    ),
                );
            }
        }
        // HiCroPL's cross layer splits its prompted blocks between the two mapping directions.
        if listed("hicropl") {
            let depth = c.hicropl_depth.unwrap_or(super::HICROPL_DEFAULT_DEPTH);
            let cross = c.hicropl_cross_layer.unwrap_or(super::HICROPL_DEFAULT_CROSS_LAYER);
            if depth >= 2 && cross >= depth {
                let (key, default) = match c.hicropl_cross_layer {
                    Some(_) => ("hicropl_cross_layer", ""),
                    None => ("hicropl_depth", " (the default)"),
                };
                problem(
                    at.key(key),
                    format!(
                        "HiCroPL's cross layer {cross}{default} must be less than its prompt depth {depth}: \
                         blocks below it map text → vision prompts, the others vision → text, and each \
                         direction needs a block; set hicropl_cross_layer in 1..{depth}"
                    ),
                );
            }
        }

        // Each (method, loss) is one record probe; a loss label like `kgcoop+ce` could repeat another
        // method's. (A method listed twice, or a loss label used twice, is reported above.)
        let mut probes: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for method in c.prompt_methods().into_iter().filter(|m| seen.insert(m.name())) {
            for loss in self.losses.iter().filter(|l| l.applies_to(Regime::Coop)) {
                let probe = method.probe_label(&loss.display_label());
                let this = (method.name().to_string(), loss.display_label());
                if let Some(first) = probes.insert(probe.clone(), this.clone())
                    && first.0 != this.0
                {
                    problem(
                        at.key("methods"),
                        format!(
                            "method `{}` with loss `{}` and method `{}` with loss `{}` both write probe \
                             `{probe}`; give one loss a distinct `label`",
                            first.0, first.1, this.0, this.1
                        ),
                    );
                }
            }
        }
    }

    /// `[regimes.full]`: lr, head options, epochs.
    fn full_problems(&self, problem: &mut Sink<'_>) {
        let Some(f) = &self.regimes.full else { return };
        let at = KeyPath::root().key("regimes").key("full");
        positive(problem, &at.key("lr"), f.lr);
        adapted_options(
            problem,
            &at,
            f.head_init.as_deref(),
            f.early_stopping,
            (f.batch_size, f.accumulate),
            f.augment.as_deref(),
        );
        if f.epochs == 0 {
            problem(at.key("epochs"), "epochs must be >= 1".into());
        }
        self.scope_problems(problem, &at, f.scope());
    }

    /// `[regimes.zero-shot]`: templates, encoders, single-label datasets.
    fn zero_shot_problems(&self, problem: &mut Sink<'_>) {
        let Some(z) = &self.regimes.zero_shot else { return };
        let at = KeyPath::root().key("regimes").key("zero-shot");
        let encoder_names: BTreeSet<String> = self.encoders.iter().map(EncoderEntry::display_name).collect();
        check_templates(problem, &at.key("templates"), &z.templates);
        check_scope_encoders(problem, &at, z.encoders.as_deref(), &encoder_names);
        check_single_label_datasets(
            problem,
            &at,
            "zero-shot classification",
            z.datasets.as_deref(),
            &self.datasets,
        );
    }

    /// `[regimes.estimate]`: known estimators, layer fractions, encoders.
    fn estimate_problems(&self, problem: &mut Sink<'_>) {
        let Some(e) = &self.regimes.estimate else { return };
        let at = KeyPath::root().key("regimes").key("estimate");
        let encoder_names: BTreeSet<String> = self.encoders.iter().map(EncoderEntry::display_name).collect();
        non_empty_distinct(problem, &at.key("estimators"), &e.estimators);
        for (i, name) in e.estimators.iter().enumerate() {
            if !names::is_known(names::ESTIMATORS, name) {
                problem(
                    at.key("estimators").index(i),
                    format!("unknown estimator `{name}`; expected one of {}", names::ESTIMATORS.join(", ")),
                );
            }
        }
        check_fractions(problem, &at.key("layers"), &e.layers, "layer fraction");
        check_scope_encoders(problem, &at, e.encoders.as_deref(), &encoder_names);
    }

    /// `[[losses]]`: known names with exactly their arguments, adapted regimes of this recipe, labels
    /// distinct per regime; every adapted regime trains with at least one loss.
    fn loss_problems(&self, problem: &mut Sink<'_>) {
        let root = KeyPath::root();
        let adapted = self.adapted_regimes();
        let mut labels: BTreeMap<(Regime, String), usize> = BTreeMap::new();
        for (i, l) in self.losses.iter().enumerate() {
            let at = root.key("losses").index(i);
            loss_name_problems(problem, &at, l);
            if let Some(list) = &l.regimes {
                if list.is_empty() {
                    problem(
                        at.key("regimes"),
                        "the list is empty (omit it to train every adapted regime)".into(),
                    );
                }
                for (j, name) in list.iter().enumerate() {
                    if !adapted.iter().any(|r| r.name() == name) {
                        problem(
                            at.key("regimes").index(j),
                            format!(
                                "`{name}` is not an adapted regime of this recipe; expected one of {}",
                                if adapted.is_empty() {
                                    "(none: add [regimes.lora], .coop or .full)".to_string()
                                } else {
                                    adapted.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ")
                                }
                            ),
                        );
                    }
                }
            }
            for regime in adapted.iter().copied().filter(|r| l.applies_to(*r)) {
                if let Some(first) = labels.insert((regime, l.display_label()), i) {
                    problem(
                        at.clone(),
                        format!(
                            "loss label `{}` is also used by losses[{first}] in regime {regime}; give one a \
                             distinct `label`",
                            l.display_label()
                        ),
                    );
                }
            }
        }
        if !self.losses.is_empty() && adapted.is_empty() {
            problem(
                root.key("losses"),
                "losses are given but no adapted regime (lora, coop, full) is".into(),
            );
        }
        for regime in &adapted {
            if !self.losses.iter().any(|l| l.applies_to(*regime)) {
                problem(
                    root.key("regimes").key(regime.name()),
                    format!("regime {regime} trains with a loss, but no [[losses]] entry applies to it"),
                );
            }
        }
    }

    /// `[evaluator]`: an existing reference (with `check_paths`), weights, robustness, regime.
    fn evaluator_problems(&self, problem: &mut Sink<'_>, options: ValidationOptions) {
        if let Some(e) = &self.evaluator {
            let at = KeyPath::root().key("evaluator");
            if let Some(reference) = &e.reference
                && options.check_paths
                && !Path::new(reference).is_file()
            {
                problem(at.key("reference"), format!("reference file `{reference}` does not exist"));
            }
            if let Some(w) = e.weights {
                check_weights(problem, &at.key("weights"), &w);
            }
            if let Some(w) = e.axis_weights {
                check_weights(problem, &at.key("axis_weights"), &w);
            }
            if !["with-shift", "corruption-only"].contains(&e.robustness.as_str()) {
                problem(
                    at.key("robustness"),
                    format!("`{}` is not `with-shift` or `corruption-only`", e.robustness),
                );
            }
            if !EVALUATED_REGIMES.iter().any(|r| r.name() == e.regime) {
                problem(at.key("regime"), format!("`{}` is not a regime", e.regime));
            }
        }
    }

    /// `[runtime]`: a device name of [`names::device_problem`]'s grammar (whether this build has the
    /// backend, and whether it comes up, is checked when the run starts).
    fn runtime_problems(&self, problem: &mut Sink<'_>) {
        if let Some(r) = &self.runtime
            && let Some(device) = &r.device
            && let Some(why) = names::device_problem(device)
        {
            problem(KeyPath::root().key("runtime").key("device"), why);
        }
    }

    /// `[cost]`: a positive `pass_seconds`.
    fn cost_problems(&self, problem: &mut Sink<'_>) {
        if let Some(c) = &self.cost
            && let Some(s) = c.pass_seconds
            && !(s.is_finite() && s > 0.0)
        {
            problem(
                KeyPath::root().key("cost").key("pass_seconds"),
                format!("{s} is not a positive number of seconds"),
            );
        }
    }
}

/// A HiCroPL descriptions file at `key`: a non-empty path and (with `check_paths`) a readable file of
/// [`crate::descriptions::parse_descriptions`]'s format (the message names the file).
fn descriptions_file_problems(problem: &mut Sink<'_>, key: KeyPath, path: &str, options: ValidationOptions) {
    if path.trim().is_empty() {
        problem(key, "the HiCroPL descriptions path is empty".into());
    } else if options.check_paths
        && let Err(why) = crate::descriptions::read_descriptions(Path::new(path))
    {
        problem(key, why);
    }
}

/// A `[[losses]]` entry's name is known and its arguments are exactly the loss's, finite.
fn loss_name_problems(problem: &mut Sink<'_>, at: &KeyPath, l: &LossEntry) {
    match names::loss_args(&l.name) {
        None => problem(
            at.key("name"),
            format!(
                "unknown loss `{}`; expected one of {}",
                l.name,
                names::LOSSES.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
            ),
        ),
        Some(expected) => {
            for (arg, v) in &l.args {
                if !expected.contains(&arg.as_str()) {
                    problem(
                        at.key("args").key(arg),
                        format!(
                            "loss `{}` takes no argument `{arg}`; its arguments: {}",
                            l.name,
                            if expected.is_empty() { "none".into() } else { expected.join(", ") }
                        ),
                    );
                } else if !v.is_finite() {
                    problem(at.key("args").key(arg), format!("{v} is not a finite number"));
                }
            }
            for arg in expected.iter().filter(|a| !l.args.contains_key(**a)) {
                problem(at.key("args"), format!("loss `{}` needs the argument `{arg}`", l.name));
            }
        }
    }
}

fn non_empty_distinct<T: PartialEq + std::fmt::Debug>(
    problem: &mut dyn FnMut(KeyPath, String),
    at: &KeyPath,
    list: &[T],
) {
    if list.is_empty() {
        problem(at.clone(), "the list is empty".into());
    }
    for (i, v) in list.iter().enumerate() {
        if list[..i].contains(v) {
            problem(at.index(i), format!("{v:?} is listed twice"));
        }
    }
}

fn check_fractions(problem: &mut dyn FnMut(KeyPath, String), at: &KeyPath, list: &[f64], what: &str) {
    non_empty_distinct(problem, at, list);
    for (i, &f) in list.iter().enumerate() {
        if !(f.is_finite() && f > 0.0 && f <= 1.0) {
            problem(at.index(i), format!("{what} {f} is outside (0, 1]"));
        }
    }
}

/// `head_init` one of [`HEAD_INITS`], `early_stopping` (patience), `batch_size` and `accumulate`
/// >= 1.
fn adapted_options(
    problem: &mut dyn FnMut(KeyPath, String),
    at: &KeyPath,
    head_init: Option<&str>,
    early_stopping: Option<u32>,
    batch: (Option<u32>, Option<u32>),
    augment: Option<&str>,
) {
    if let Some(a) = augment
        && !super::AUGMENTS.contains(&a)
    {
        problem(
            at.key("augment"),
            format!("unknown augment `{a}`; expected one of {}", super::AUGMENTS.join(", ")),
        );
    }
    for (key, value) in [("batch_size", batch.0), ("accumulate", batch.1)] {
        if value == Some(0) {
            problem(at.key(key), format!("{key} must be >= 1"));
        }
    }
    if let Some(h) = head_init
        && !HEAD_INITS.contains(&h)
    {
        problem(
            at.key("head_init"),
            format!("unknown head_init `{h}`; expected one of {}", HEAD_INITS.join(", ")),
        );
    }
    if early_stopping == Some(0) {
        problem(at.key("early_stopping"), "the early-stopping patience must be >= 1 epoch".into());
    }
}

fn positive(problem: &mut dyn FnMut(KeyPath, String), at: &KeyPath, v: f64) {
    if !(v.is_finite() && v > 0.0) {
        problem(at.clone(), format!("{v} must be a positive number"));
    }
}

fn check_weights(problem: &mut dyn FnMut(KeyPath, String), at: &KeyPath, w: &[f64]) {
    let sum: f64 = w.iter().sum();
    if w.iter().any(|x| !x.is_finite() || *x < 0.0) || (sum - 1.0).abs() > 1e-9 {
        problem(at.clone(), format!("weights {w:?} must be non-negative and sum to 1"));
    }
}

fn check_scope_encoders(
    problem: &mut dyn FnMut(KeyPath, String),
    at: &KeyPath,
    list: Option<&[String]>,
    known: &BTreeSet<String>,
) {
    let Some(list) = list else { return };
    non_empty_distinct(problem, &at.key("encoders"), list);
    for (i, name) in list.iter().enumerate() {
        if !known.contains(name) {
            problem(
                at.key("encoders").index(i),
                format!(
                    "`{name}` is not an encoder of this recipe; expected one of {}",
                    known.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
}

/// The zero-shot `templates` list: non-empty; each entry `mvc-bench`, an id `P1`…`P7`, or a text
/// with exactly one `{}`; no template twice (also not through `mvc-bench`).
fn check_templates(problem: &mut dyn FnMut(KeyPath, String), at: &KeyPath, list: &[String]) {
    if list.is_empty() {
        problem(at.clone(), "the list is empty".into());
    }
    let expected = format!(
        "expected an MVC-Bench id P1…P{MVC_BENCH_TEMPLATE_COUNT}, \"mvc-bench\" (all of them) or a template \
         text with exactly one `{{}}` for the class name"
    );
    // Which entry first brought each MVC-Bench id or custom text in.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |problem: &mut dyn FnMut(KeyPath, String), key: String, i: usize, what: &str| {
        if let Some(&first) = seen.get(&key) {
            let via = if list[first] == "mvc-bench" { " (through \"mvc-bench\")" } else { "" };
            problem(at.index(i), format!("{what} is already listed at index {first}{via}"));
        } else {
            seen.insert(key, i);
        }
    };
    for (i, t) in list.iter().enumerate() {
        if t == "mvc-bench" {
            for n in 1..=MVC_BENCH_TEMPLATE_COUNT {
                add(problem, format!("P{n}"), i, &format!("template P{n}"));
            }
        } else if let Some(n) = mvc_bench_index(t) {
            if (1..=MVC_BENCH_TEMPLATE_COUNT).contains(&n) {
                add(problem, t.clone(), i, &format!("template {t}"));
            } else {
                problem(at.index(i), format!("`{t}` is not an MVC-Bench template id; {expected}"));
            }
        } else {
            match t.matches("{}").count() {
                1 => add(problem, format!("text:{t}"), i, &format!("template {t:?}")),
                0 => problem(
                    at.index(i),
                    format!("template {t:?} has no `{{}}` for the class name; {expected}"),
                ),
                n => problem(
                    at.index(i),
                    format!("template {t:?} has {n} `{{}}`; exactly one (the class name) is expected"),
                ),
            }
        }
    }
}

/// The `datasets` scope of a prompt regime (zero-shot, CoOp): names of this recipe, and no dataset
/// whose spec alone says it is multilabel (both score classes with a softmax over class prompts).
fn check_single_label_datasets(
    problem: &mut dyn FnMut(KeyPath, String),
    at: &KeyPath,
    what: &str,
    list: Option<&[String]>,
    datasets: &[DatasetEntry],
) {
    let known: BTreeSet<String> = datasets.iter().map(DatasetEntry::display_name).collect();
    if let Some(list) = list {
        non_empty_distinct(problem, &at.key("datasets"), list);
        for (i, name) in list.iter().enumerate() {
            if !known.contains(name) {
                problem(
                    at.key("datasets").index(i),
                    format!(
                        "`{name}` is not a dataset of this recipe; expected one of {}",
                        known.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
    let single_label: Vec<String> = datasets
        .iter()
        .filter(|d| !is_known_multilabel(d))
        .map(|d| format!("\"{}\"", d.display_name()))
        .collect();
    for d in datasets {
        let name = d.display_name();
        let in_scope = list.is_none_or(|l| l.contains(&name));
        if in_scope && is_known_multilabel(d) {
            let key = match list {
                Some(l) => at.key("datasets").index(l.iter().position(|n| *n == name).unwrap_or(0)),
                None => at.clone(),
            };
            problem(
                key,
                format!(
                    "{what} needs a single-label dataset, but `{name}` ({}) is multilabel; \
                     restrict the regime with datasets = [{}]",
                    d.spec,
                    single_label.join(", ")
                ),
            );
        }
    }
}

/// Whether the dataset's spec alone says its task is multilabel.
fn is_known_multilabel(dataset: &DatasetEntry) -> bool {
    calibra_data::DatasetSpec::parse(&dataset.spec)
        .ok()
        .and_then(|s| s.known_task_kind())
        .is_some_and(|k| k == calibra_data::TaskKind::Multilabel)
}

fn check_calibrators(problem: &mut dyn FnMut(KeyPath, String), at: &KeyPath, list: &[String]) {
    non_empty_distinct(problem, at, list);
    for (i, c) in list.iter().enumerate() {
        if !names::is_known(&names::calibrators(), c) {
            problem(
                at.index(i),
                format!("unknown calibrator `{c}`; expected one of {}", names::calibrators().join(", ")),
            );
        }
    }
}

/// A multilabel dataset (when its spec alone says so) cannot take a single-label-only calibrator:
/// caught here, before any work, instead of as a failed run per fit.
fn check_calibrators_fit_task(
    problem: &mut dyn FnMut(KeyPath, String),
    root: &KeyPath,
    index: usize,
    dataset: &DatasetEntry,
    calibrators: &[String],
) {
    let multilabel = calibra_data::DatasetSpec::parse(&dataset.spec)
        .ok()
        .and_then(|s| s.known_task_kind())
        .is_some_and(|k| k == calibra_data::TaskKind::Multilabel);
    if !multilabel {
        return;
    }
    let supported: Vec<&str> =
        calibrators.iter().map(String::as_str).filter(|c| !names::single_label_calibrator(c)).collect();
    for (i, c) in calibrators.iter().enumerate() {
        if names::single_label_calibrator(c) {
            let at = match dataset.calibrators {
                Some(_) => root.key("datasets").index(index).key("calibrators").index(i),
                None => root.key("calibrators").index(i),
            };
            problem(
                at,
                format!(
                    "`{c}` calibrates single-label (multiclass / ordinal) predictions, but dataset `{}` \
                     ({}) is multilabel; give that [[datasets]] entry its own list, e.g. calibrators = [{}]",
                    dataset.display_name(),
                    dataset.spec,
                    supported.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
}

fn check_spec(
    problem: &mut dyn FnMut(KeyPath, String),
    at: &KeyPath,
    spec: &str,
    options: ValidationOptions,
) {
    match calibra_data::DatasetSpec::parse(spec) {
        Err(e) => problem(at.clone(), e.to_string()),
        Ok(parsed) => {
            if let Err(e) = calibra_data::check_spec_options(&parsed) {
                problem(at.clone(), e.to_string());
            } else if parsed.format == calibra_data::DatasetFormat::Synth {
                if calibra_data::SynthSuite::parse(&parsed.location).is_none() {
                    problem(at.clone(), format!("unknown synthetic suite `{}`", parsed.location));
                }
            } else if options.check_paths && !Path::new(&parsed.location).exists() {
                problem(
                    at.clone(),
                    format!(
                        "dataset location `{}` does not exist (download it first, or pass --no-check-paths)",
                        parsed.location
                    ),
                );
            }
        }
    }
}
