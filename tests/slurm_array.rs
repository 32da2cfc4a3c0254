//! The Slurm array path executed (issue 23): a private single-node Slurm (munged, slurmctld and slurmd
//! on localhost, generated `slurm.conf` in a temp dir, the node's real CPUs and memory from
//! `slurmd -C`) runs `scripts/slurm/calibra-array.sbatch` on a small frozen recipe in 3 shards:
//!
//! 1. submit mode (the script run directly): shard array + merge + report; the merged store's records
//!    equal a single-process run byte for byte after sorting, and the report exists; a job that can
//!    never run (more memory than the node has) is refused up front with a message, nothing queued;
//! 2. `sbatch --array` directly, with one array task requeued (`scontrol requeue`) while it runs: it
//!    resumes its shard store, and the final records are those of one process — nothing lost, nothing
//!    duplicated.
//!
//! Needs root and Slurm's binaries (`.ci/install-slurm` installs them on Debian). Without them the
//! test says so loudly and skips — except under `CI=true`, where it fails. Every daemon it starts is
//! stopped by a guard, also when the test fails.
mod common;

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// 1 dataset × 3 fractions × 6 seeds of the `prior` probe = 18 fits; 3 conditions × 2 calibrators.
const RECIPE: &str = r#"seeds = [0, 1, 2, 3, 4, 5]
label_fractions = [0.1, 0.5, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "none"
source = "hf:calibra/none"

[[datasets]]
spec = "synth:derm?n=3000"

[perturbations]
names = ["jpeg"]
severities = [1, 3]

[regimes.frozen]
probes = ["prior"]
"#;

const BINARIES: [&str; 8] =
    ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"];

/// Why this machine cannot run the test, if it cannot.
fn missing_requirements() -> Option<String> {
    let missing: Vec<&str> = BINARIES
        .iter()
        .copied()
        .filter(|b| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {b}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "Slurm binaries not found: {} (install them with .ci/install-slurm)",
            missing.join(", ")
        ));
    }
    let uid =
        Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref().ok() != Some("0") {
        return Some("not root: the private slurmd must run as root to start jobs".into());
    }
    None
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Polls `done` every 250 ms until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    done()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn sorted_lines(store: &Path) -> Vec<String> {
    let mut lines: Vec<String> = fs::read_to_string(store.join("runs.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm/calibra-array.sbatch")
}

/// A private Slurm on localhost; dropping it cancels every job and stops every daemon it started.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    /// The node's memory (MB), from `slurmd -C`.
    memory_mb: u64,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let conf = root.join("slurm.conf");
        let mut cluster = Cluster { dir, conf: conf.clone(), daemons: Vec::new(), memory_mb: 0 };
        for d in ["munge", "state", "spool", "log"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        // MUNGE with its own key and socket (munged refuses a key readable by others).
        use std::os::unix::fs::PermissionsExt;
        let key = root.join("munge/munge.key");
        let mut bytes = vec![0u8; 128];
        File::open("/dev/urandom").unwrap().read_exact(&mut bytes).unwrap();
        fs::write(&key, &bytes).unwrap();
        fs::set_permissions(&key, fs::Permissions::from_mode(0o400)).unwrap();
        fs::set_permissions(root.join("munge"), fs::Permissions::from_mode(0o755)).unwrap();
        let socket = root.join("munge/munge.sock");
        cluster.spawn(
            "munged",
            Command::new("munged").args(["--foreground", "--force"]).args([
                format!("--socket={}", socket.display()),
                format!("--key-file={}", key.display()),
                format!("--log-file={}", root.join("log/munged.log").display()),
                format!("--pid-file={}", root.join("munge/munged.pid").display()),
                format!("--seed-file={}", root.join("munge/munged.seed").display()),
            ]),
        );
        assert!(wait_until(Duration::from_secs(10), || socket.exists()), "munged did not create its socket");

        // The node as slurmd sees it (`slurmd -C` needs no configuration).
        let probe = Command::new("slurmd").arg("-C").output().unwrap();
        let node = String::from_utf8_lossy(&probe.stdout).to_string();
        let field = |name: &str| -> u64 {
            node.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("`slurmd -C` printed no {name}: {node}"))
        };
        let (cpus, memory_mb) = (field("CPUs"), field("RealMemory"));
        cluster.memory_mb = memory_mb;
        let host = Command::new("hostname").arg("-s").output().unwrap();
        let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let p = |sub: &str| root.join(sub).display().to_string();
        let text = format!(
            "ClusterName=calibratest\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={socket}\n\
             SlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\nSlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={ctld_log}\nSlurmdLogFile={slurmd_log}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU_Memory\n\
             MpiDefault=none\nReturnToService=2\nSchedulerType=sched/backfill\n\
             SchedulerParameters=sched_interval=2\nMinJobAge=600\n\
             NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN\n\
             PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            socket = socket.display(),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            slurmd_pid = p("slurmd.pid"),
            ctld_log = p("log/slurmctld.log"),
            slurmd_log = p("log/slurmd.log"),
        );
        fs::write(&conf, text).unwrap();
        cluster.spawn("slurmctld", Command::new("slurmctld").args(["-D", "-i", "-f"]).arg(&conf));
        let up = wait_until(Duration::from_secs(30), || {
            cluster.cmd("sinfo").arg("-h").output().is_ok_and(|o| o.status.success())
        });
        assert!(up, "slurmctld did not answer");
        cluster.spawn("slurmd", Command::new("slurmd").args(["-D", "-N", "localhost", "-f"]).arg(&conf));
        let idle = wait_until(Duration::from_secs(60), || {
            cluster
                .cmd("sinfo")
                .args(["-h", "-n", "localhost", "-o", "%T"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        assert!(idle, "the node never became idle: {}", cluster.squeue_and_sinfo());
        cluster
    }

    fn spawn(&mut self, name: &'static str, command: &mut Command) {
        let log = File::create(self.dir.path().join(format!("log/{name}.out"))).unwrap();
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// A Slurm client command talking to this cluster.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.cmd(program).args(args).output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// (job id, state) of every job the controller knows.
    fn jobs(&self) -> Vec<(String, String)> {
        self.run("squeue", &["-h", "-t", "all", "-o", "%i %T"])
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
            .collect()
    }

    fn active_jobs(&self) -> usize {
        self.jobs()
            .iter()
            .filter(|(_, s)| {
                ![
                    "COMPLETED",
                    "FAILED",
                    "CANCELLED",
                    "TIMEOUT",
                    "OUT_OF_MEMORY",
                    "NODE_FAIL",
                    "BOOT_FAIL",
                    "DEADLINE",
                ]
                .contains(&s.as_str())
            })
            .count()
    }

    fn state(&self, job: &str) -> String {
        self.run("squeue", &["-h", "-t", "all", "-j", job, "-o", "%T"])
    }

    fn squeue_and_sinfo(&self) -> String {
        let q = self.cmd("squeue").args(["-t", "all", "-o", "%i %j %T %r %S"]).output().map(|o| text(&o));
        let i = self.cmd("sinfo").args(["-N", "-l"]).output().map(|o| text(&o));
        format!("squeue:\n{}\nsinfo:\n{}", q.unwrap_or_default(), i.unwrap_or_default())
    }

    /// Waits (bounded) until no job is pending or running.
    fn wait_idle(&self, timeout: Duration, what: &str, work: &Path) {
        if !wait_until(timeout, || self.active_jobs() == 0) {
            panic!(
                "{what}: jobs still queued after {timeout:?}\n{}\n{}",
                self.squeue_and_sinfo(),
                logs(work)
            );
        }
    }
}

/// Every `*.log` of `dir` (the jobs' logs), for failure messages.
fn logs(dir: &Path) -> String {
    let mut out = String::new();
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for p in names {
        out.push_str(&format!("--- {}\n{}\n", p.display(), fs::read_to_string(&p).unwrap_or_default()));
    }
    out
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Cancel whatever still runs, then stop the daemons (SIGTERM, SIGKILL after 15 s).
        let _ = self.cmd("scancel").args(["--quiet", "--user=root"]).output();
        wait_until(Duration::from_secs(20), || {
            self.cmd("squeue")
                .args(["-h", "-t", "running,completing"])
                .output()
                .is_ok_and(|o| o.stdout.is_empty())
        });
        if std::thread::panicking() {
            for name in ["slurmctld.log", "slurmd.log", "munged.log"] {
                let text = fs::read_to_string(self.dir.path().join("log").join(name)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                eprintln!("--- tail of {name}\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
        }
        for (name, child) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let stopped = wait_until(Duration::from_secs(15), || child.try_wait().is_ok_and(|s| s.is_some()));
            if !stopped {
                eprintln!("{name} ignored SIGTERM; killing it");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// The environment of the array script.
/// `CALIBRA` for the requeue case: the first attempt (`SLURM_RESTART_COUNT` 0) of array task 1's
/// `calibra run` is stopped with SIGSTOP as soon as its store holds a committed record; every other
/// call (other shards, the restarted task, merge, report) runs calibra unchanged.
const FREEZING_WRAPPER: &str = r#"#!/usr/bin/env bash
if [ "$1" = run ] && [ "${SLURM_ARRAY_TASK_ID:-}" = 1 ] && [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  store=""; prev=""
  for a in "$@"; do [ "$prev" = --out ] && store="$a"; prev="$a"; done
  "$REAL_CALIBRA" "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ ! -s "$store/journal/fits.jsonl" ]; do sleep 0.002; done
  kill -STOP "$pid" 2>/dev/null
  wait "$pid"
  exit $?
fi
exec "$REAL_CALIBRA" "$@"
"#;

fn script_env(cmd: &mut Command, recipe: &Path, out: &Path) {
    cmd.env("RECIPE", recipe)
        .env("OUT", out)
        .env("SHARDS", "3")
        .env("CALIBRA", env!("CARGO_BIN_EXE_calibra"))
        .env("MERGE_CPUS", "1")
        .env("MERGE_MEM", "256M")
        .env("MERGE_TIME", "10:00");
}

const TASK_OPTIONS: [&str; 3] = ["--cpus-per-task=1", "--mem=256M", "--time=10:00"];

#[test]
fn the_slurm_array_script_runs_merges_reports_and_survives_a_requeue() {
    if let Some(why) = missing_requirements() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        eprintln!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! tests/slurm_array.rs NOT RUN: {why}\n\
             !!! the Slurm array path (scripts/slurm/calibra-array.sbatch) is UNTESTED here{}\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
            if ci { " — and CI=true, so this is a failure" } else { "" }
        );
        assert!(!ci, "CI=true but the Slurm test cannot run: {why}");
        return;
    }
    // One private cluster at a time on this machine, whatever else runs tests.
    let lock = File::create(std::env::temp_dir().join("calibra-slurm-test.lock")).unwrap();
    lock.lock().unwrap();
    let cluster = Cluster::start();
    let root = cluster.dir.path().to_path_buf();
    let recipe = root.join("recipe.toml");
    fs::write(&recipe, RECIPE).unwrap();
    let recipe_s = recipe.display().to_string();

    // The reference: one process.
    let whole = root.join("whole");
    let out = common::calibra(&["run", &recipe_s, "--out", &whole.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let expected = sorted_lines(&whole);
    assert_eq!(expected.len(), 18 * 3 * 2);

    // --- Case 1: submit mode, checked up front.
    let work = root.join("case1");
    fs::create_dir_all(&work).unwrap();
    let out_dir = work.join("out");
    let submit = |extra: &[&str], merge_mem: &str| {
        let mut cmd = cluster.cmd("bash");
        cmd.arg(script()).args(extra).current_dir(&work);
        script_env(&mut cmd, &recipe, &out_dir);
        cmd.env("MERGE_MEM", merge_mem);
        cmd.output().unwrap()
    };
    let too_big = format!("--mem={}M", cluster.memory_mb * 4);
    let refused = submit(&["--cpus-per-task=1", &too_big, "--time=10:00"], "256M");
    assert!(
        !refused.status.success() && text(&refused).contains("shard task can never run"),
        "{}",
        text(&refused)
    );
    let refused = submit(&TASK_OPTIONS, &format!("{}M", cluster.memory_mb * 4));
    let said = text(&refused);
    assert!(
        !refused.status.success()
            && said.contains("merge + report job can never run")
            && said.contains("MERGE_MEM"),
        "{said}"
    );
    assert_eq!(cluster.jobs(), Vec::new(), "a refused submission queues nothing");

    let started = Instant::now();
    let submitted = submit(&TASK_OPTIONS, "256M");
    let said = text(&submitted);
    assert!(submitted.status.success(), "{said}");
    assert!(
        said.contains("balance: max/min estimated shard cost") && said.contains("submitted: shard array job"),
        "{said}"
    );
    cluster.wait_idle(Duration::from_secs(240), "case 1", &work);
    let report = out_dir.join("merged/report/report.md");
    assert!(report.is_file(), "no report at {}\n{}", report.display(), logs(&work));
    assert_eq!(sorted_lines(&out_dir.join("merged")), expected, "merged records differ\n{}", logs(&work));
    let per_shard: Vec<usize> =
        (0..3).map(|i| sorted_lines(&out_dir.join(format!("shards/{i}"))).len()).collect();
    assert_eq!(per_shard, vec![36, 36, 36], "18 equal-cost fits over 3 shards: 6 each");
    eprintln!("case 1 (3 shards + merge + report) took {:.1} s", started.elapsed().as_secs_f64());

    // --- Case 2: `sbatch --array` directly; shard 1 requeued while it runs.
    let work = root.join("case2");
    fs::create_dir_all(&work).unwrap();
    let out_dir = work.join("out");
    // The first attempt of shard 1 runs through a wrapper that freezes calibra (SIGSTOP) right after
    // its first committed fit (the journal line, the store's commit point; records already in
    // runs.jsonl may still be cut): the requeue below then lands mid-run however fast the fits are
    // (idle, shard 1's six `prior` fits took 0.3 s, faster than a poll could suspend it).
    let wrapper = work.join("calibra-freezing-shard-1");
    fs::write(&wrapper, FREEZING_WRAPPER).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cmd = cluster.cmd("sbatch");
    cmd.args(["--parsable", "--array=0-2"]).args(TASK_OPTIONS).arg(script()).current_dir(&work);
    script_env(&mut cmd, &recipe, &out_dir);
    cmd.env("CALIBRA", &wrapper).env("REAL_CALIBRA", env!("CARGO_BIN_EXE_calibra"));
    let sub = cmd.output().unwrap();
    assert!(sub.status.success(), "{}", text(&sub));
    let array = String::from_utf8_lossy(&sub.stdout).trim().to_string();
    let task = format!("{array}_1");
    let shard1 = out_dir.join("shards/1");
    // As soon as shard 1 has committed a fit, freeze it (SIGSTOP), so that it is requeued mid-run
    // however fast its fits are.
    let committed =
        || fs::read_to_string(shard1.join("journal/fits.jsonl")).unwrap_or_default().lines().count();
    let started = wait_until(Duration::from_secs(120), || committed() > 0);
    assert!(started, "shard 1 never committed a fit\n{}\n{}", cluster.squeue_and_sinfo(), logs(&work));
    cluster.run("scontrol", &["suspend", &task]);
    // The fits committed when it froze (records of a fit being committed may follow in runs.jsonl;
    // the resumed run cuts and reruns that fit, which is the store's crash rule, not a loss).
    let before = committed();
    assert!(before < 6, "shard 1 finished before it could be suspended ({before} fits committed)");
    cluster.run("scontrol", &["requeue", &task]);
    // A requeued suspended job is held, and a requeued job waits (BeginTime): let it start now.
    assert!(
        wait_until(Duration::from_secs(30), || cluster.state(&task) == "PENDING"),
        "{}",
        cluster.squeue_and_sinfo()
    );
    cluster.run("scontrol", &["release", &task]);
    let _ = cluster.cmd("scontrol").args(["update", &format!("jobid={task}"), "StartTime=now"]).output();
    cluster.wait_idle(Duration::from_secs(240), "case 2", &work);
    let log = fs::read_to_string(work.join(format!("calibra-{array}_1.log"))).unwrap_or_default();
    assert!(log.contains("restart 1") && log.contains("breaking the lock of a previous instance"), "{log}");
    let resumed = log.lines().find(|l| l.contains("already finished")).unwrap_or_else(|| panic!("{log}"));
    let already: usize = resumed
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{resumed}"));
    assert!(
        already >= before && already < 6,
        "the requeued task resumed its store: {resumed} ({before} fits committed before)"
    );
    // Nothing duplicated within the shard, nothing lost overall.
    let lines = sorted_lines(&shard1);
    let unique: std::collections::BTreeSet<&String> = lines.iter().collect();
    assert_eq!((lines.len(), unique.len()), (36, 36), "shard 1 after the requeue");
    assert!(out_dir.join("merged/report/report.md").is_file(), "{}", logs(&work));
    assert_eq!(
        sorted_lines(&out_dir.join("merged")),
        expected,
        "merged records after a requeue\n{}",
        logs(&work)
    );
    drop(cluster);
}
