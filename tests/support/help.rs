//! `jobgate --help` as the docs and the tests read it.

use std::process::Command;

/// `jobgate ARGS --help`, with no JOBGATE_* variable set (clap prints a variable's current
/// value next to its flag).
pub fn help(args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.args(args).arg("--help");
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd.output().expect("run jobgate --help");
    assert!(out.status.success(), "jobgate {args:?} --help failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The commands `jobgate --help` lists, in its order (clap's own `help` left out).
pub fn subcommands() -> Vec<String> {
    help(&[])
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}
