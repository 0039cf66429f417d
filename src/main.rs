//! The `jobgate` binary: parse the command line, set up logging, run a subcommand.

mod cli;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command, LogFormat};
use jobgate::server::{self, Listening};

fn main() -> ExitCode {
    let cli = parse_command_line();
    // One-shot commands say their errors once themselves; kube's client would log each failed
    // request again at ERROR.
    let level = match cli.command {
        Command::Audit(_) | Command::Status(_) => {
            format!("{},kube_client::client::builder=off", cli.log_level)
        }
        _ => cli.log_level.clone(),
    };
    init_tracing(cli.log_format, &level);
    if let Some(code) = run_offline(&cli.command) {
        return code;
    }
    jobgate::server::tls::install_crypto_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("jobgate: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    run_online(cli.command, &runtime)
}

/// The offline and synchronous commands (no runtime, no TLS); `None` for the others.
fn run_offline(command: &Command) -> Option<ExitCode> {
    let result = match command {
        // `--cluster` reads the cluster's release first: on the runtime.
        Command::Check(args) if args.reads_cluster() => return None,
        Command::Render(args) if args.reads_cluster() => return None,
        Command::Check(args) => {
            return Some(ExitCode::from(jobgate::check::run(args).clamp(0, 255) as u8));
        }
        Command::Render(args) => {
            return Some(ExitCode::from(
                jobgate::admission_policy::command::run(args).clamp(0, 255) as u8,
            ));
        }
        Command::Version(args) => version::write(args.output, &mut std::io::stdout()),
        Command::Completion(args) => completion(args.shell),
        Command::Man(args) => man(args.out.as_deref()),
        _ => return None,
    };
    Some(match result {
        Ok(()) => ExitCode::SUCCESS,
        // `jobgate completion bash | head` closes the pipe early: not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jobgate: {e}");
            ExitCode::FAILURE
        }
    })
}

/// The commands that run on the async runtime and talk to a cluster or serve.
fn run_online(command: Command, runtime: &tokio::runtime::Runtime) -> ExitCode {
    // Errors are said as `jobgate <command>: ...`, as `audit` and `check` say theirs.
    let who = match &command {
        Command::Serve(_) => "jobgate serve",
        Command::Certs(_) => "jobgate certs",
        Command::Reconcile(_) => "jobgate reconcile",
        Command::Status(_) => "jobgate status",
        _ => "jobgate",
    };
    let result = match command {
        Command::Serve(args) => runtime
            .block_on(server::serve(
                args,
                print_banner,
                jobgate::runtime::signal(),
            ))
            .map_err(anyhow::Error::from),
        Command::Check(args) => {
            let code = runtime.block_on(jobgate::check::run_on_cluster(&args));
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
        Command::Render(args) => {
            let code = runtime.block_on(jobgate::admission_policy::command::run_on_cluster(&args));
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
        Command::Version(_) | Command::Completion(_) | Command::Man(_) => Ok(()),
        Command::Certs(args) => jobgate::certs::run(&args).map_err(anyhow::Error::from),
        Command::Reconcile(args) => runtime
            .block_on(jobgate::reconciler::run(args))
            .map_err(anyhow::Error::from),
        Command::Status(args) => runtime
            .block_on(jobgate::status::run(args))
            .map_err(anyhow::Error::from),
        Command::Audit(args) => {
            // As `check`: 1 means "would be denied", so a cluster that cannot be read is 2.
            let code = runtime
                .block_on(jobgate::audit::run(&args))
                .unwrap_or_else(|e| {
                    report_error("jobgate audit", &e, jobgate::audit::RBAC_HINT);
                    jobgate::check::EXIT_UNREADABLE
                });
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report_error(
                who,
                e.as_ref(),
                "the ClusterRole jobgate (deploy/base) grants the reconciler's calls; jobgate status \
                 needs list on jobs, pods and nodes and get on leases in the lease namespace (and \
                 list on pods in all namespaces to find the install without --lease-namespace)",
            );
            ExitCode::FAILURE
        }
    }
}

/// The command line, with where each rule flag's value came from (flag or environment), which
/// only clap's matches know.
fn parse_command_line() -> Cli {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some((_, sub)) = matches.subcommand() {
        match &mut cli.command {
            Command::Serve(args) => args.rules.note_value_sources(sub),
            Command::Check(args) => args.note_value_sources(sub),
            Command::Audit(args) => args.note_value_sources(sub),
            _ => {}
        }
    }
    cli
}

/// The completion script of `shell`, from the same command definition the parser uses.
fn completion(shell: clap_complete::Shell) -> std::io::Result<()> {
    // Rendered into memory first: clap_complete panics when its writer fails (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "jobgate", &mut script);
    std::io::Write::write_all(&mut std::io::stdout(), &script)
}

/// The man page of `jobgate` on stdout, or every command's page written into `out`.
fn man(out: Option<&std::path::Path>) -> std::io::Result<()> {
    let mut command = Cli::command();
    // As generate_to does, so that the printed page and the written one are the same.
    command.build();
    match out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            clap_mangen::generate_to(command, dir)
        }
        None => clap_mangen::Man::new(command).render(&mut std::io::stdout()),
    }
}

/// An error said once, API errors as kubectl says them, a 403 with the RBAC that grants the
/// calls.
fn report_error(who: &str, error: &(dyn std::error::Error + 'static), rbac: &str) {
    eprintln!("{who}: {}", jobgate::api_error::render(error));
    if let Some(hint) = jobgate::api_error::rbac_hint(error, rbac) {
        eprintln!("{hint}");
    }
}

fn init_tracing(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level).unwrap_or_else(|e| {
        eprintln!("jobgate: invalid --log-level {level:?} ({e}); using info");
        tracing_subscriber::EnvFilter::new("info")
    });
    // Colour only for a person at a terminal: a file, a pipe or a container log (kubelet writes
    // stderr to a file) gets plain text. NO_COLOR (no-color.org) turns it off at a terminal too.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
    }
}

/// Tells a person (or a test) where jobgate listens and how to try it.
fn print_banner(l: &Listening) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let port = l.addr.port();
    let _ = writeln!(
        out,
        "jobgate: serving webhooks on https://{} (admin http://{})",
        l.addr, l.admin_addr
    );
    if let Some(dev) = &l.dev {
        let _ = writeln!(
            out,
            "jobgate: dev mode: throw-away CA and localhost certificate in {}/ (ca.crt, tls.crt, tls.key)",
            dev.dir.display()
        );
        let _ = writeln!(out, "try:");
        let _ = writeln!(
            out,
            "  curl --cacert {} -H 'Content-Type: application/json' --data @tests/fixtures/validate/job-allowed.request.json https://localhost:{port}/validate",
            dev.ca_cert.display()
        );
    }
    let _ = out.flush();
}
