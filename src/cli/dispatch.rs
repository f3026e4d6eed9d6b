//! From a parsed command line to the session that does the work: the global flags become the
//! session's [`Overrides`], each subcommand's arguments its request.

use super::args::{
    Cli, Command, ConfigCommand, DebugCommand, EvalCommand, GatesArgs, GithubArgs, OutputArgs,
    PullRequestChecksArg, PullRequestFixArg, ReportCommand, ResumeArgs, RunArgs, TraceCommand,
    WorktreesCommand,
};
use crate::github::provenance::{FixPlace, PullPolicy};
use crate::github::trigger::PullRequestChecks;
use crate::session::commands::{self, GatesFormat, GatesRequest, ReportRequest};
use crate::session::github::StepSettings;
use crate::session::run::{self, Output, ResumeRequest, RunRequest, TaskInput};
use crate::session::{Done, Environment, Overrides, SessionError};

/// Runs an async command (everything but the supervisor).
pub async fn run(cli: &Cli, env: &Environment) -> Result<Done, SessionError> {
    let overrides = overrides(cli);
    match &cli.command {
        Command::Run(args) => run::run(&overrides, env, &run_request(args)?).await,
        Command::Resume(args) => run::resume(&overrides, env, &resume_request(args)).await,
        Command::Github(args) => {
            crate::session::github::github(&step_settings(args), &overrides, env).await
        }
        Command::Gates(args) => commands::gates(&overrides, env, &gates_request(args)).await,
        Command::Report(command) => commands::report(&report_request(command)),
        Command::Config(ConfigCommand::Check) => commands::config_check(&overrides, env).await,
        Command::Config(ConfigCommand::Schema) => Ok(commands::config_schema()),
        Command::Debug(DebugCommand::Context { session, json }) => {
            commands::debug_context(&overrides, session.as_deref(), *json)
        }
        Command::Hindsight(args) => commands::hindsight(&overrides, env, args).await,
        Command::Eval(command) => eval(command, &overrides, env).await,
        Command::Memory(args) => crate::session::memory::memory(&overrides, env, args).await,
        Command::Worktrees(WorktreesCommand::List { json }) => {
            crate::session::worktrees::list(&overrides, env, *json)
        }
        Command::Worktrees(WorktreesCommand::Prune) => {
            crate::session::worktrees::prune(&overrides, env)
        }
        Command::Trace(TraceCommand::Show { run }) => crate::session::trace::show(&overrides, run),
        Command::Trace(TraceCommand::Replay { run, speed, until }) => {
            crate::session::trace::replay(
                &overrides,
                &crate::session::trace::ReplayRequest {
                    run: run.clone(),
                    speed: *speed,
                    until: until.clone(),
                },
            )
        }
        Command::Supervise(_) => Err(SessionError::Internal(
            "the supervisor runs without a runtime".into(),
        )),
    }
}

async fn eval(
    command: &EvalCommand,
    overrides: &Overrides,
    env: &Environment,
) -> Result<Done, SessionError> {
    use crate::session::eval;
    match command {
        EvalCommand::Run(args) => {
            let shard = args.shard.as_deref().map(str::parse).transpose()?;
            let request = eval::EvalRunRequest {
                suite: args.suite.clone(),
                runs: args.runs,
                jobs: args.jobs,
                shard,
                out: args.out.clone(),
                json: args.json,
                resume: args.resume,
                tasks: args.tasks.clone(),
            };
            eval::run(overrides, env, &request).await
        }
        EvalCommand::Grade(args) => {
            eval::grade(
                &eval::GradeRequest {
                    dir: args.dir.clone(),
                    task: args.task.clone(),
                    run: args.run,
                    pass: args.pass,
                    note: args.note.clone(),
                },
                env,
            )
            .await
        }
        EvalCommand::Merge { dirs, out, json } => eval::merge(dirs, out, *json, env).await,
        EvalCommand::Compare(args) => eval::compare(&eval::CompareRequest {
            a: args.a.clone(),
            b: args.b.clone(),
            gate: crate::eval::compare::Gate {
                alpha: args.alpha,
                threshold: args.threshold,
            },
            json: args.json,
        }),
        EvalCommand::Mine(args) => {
            let request = eval::MineRequest {
                since: args.since.clone(),
                max: args.max,
                out: args.out.clone(),
                issues_from: args.issues_from.clone(),
                resume: args.resume,
            };
            eval::mine(overrides, env, &request).await
        }
        EvalCommand::Schema => Ok(eval::schema()),
    }
}

fn overrides(cli: &Cli) -> Overrides {
    Overrides {
        repo: cli.repo.clone(),
        config: cli.config.clone(),
        llm_provider: cli.llm_provider,
        model: cli.model.clone(),
        fast_model: cli.fast_model.clone(),
        llm_base_url: cli.llm_base_url.clone(),
        worktrees_dir: cli.worktrees_dir.clone(),
        pause_at: cli.pause_at.clone(),
        verbose: cli.verbose > 0,
        quiet: cli.quiet,
    }
}

fn output(args: &OutputArgs) -> Output {
    Output {
        json: args.json,
        out: args.out.clone(),
    }
}

fn run_request(args: &RunArgs) -> Result<RunRequest, SessionError> {
    let task = match (&args.task, &args.text) {
        (Some(path), _) => TaskInput::File(path.clone()),
        (None, Some(text)) => TaskInput::Text(text.clone()),
        (None, None) => {
            return Err(SessionError::Usage(
                "give --task FILE or --text TEXT".into(),
            ));
        }
    };
    Ok(RunRequest {
        task,
        dry_run: args.dry_run,
        from_head: args.from_head,
        max_iterations: args.max_iterations,
        output: output(&args.output),
    })
}

fn resume_request(args: &ResumeArgs) -> ResumeRequest {
    ResumeRequest {
        session: args.session.clone(),
        guidance: args.guidance.clone(),
        step: args.step,
        output: output(&args.output),
    }
}

fn gates_request(args: &GatesArgs) -> GatesRequest {
    let format = if args.json {
        GatesFormat::Json
    } else if args.markdown {
        GatesFormat::Markdown
    } else {
        GatesFormat::Terminal
    };
    GatesRequest {
        only: args.only.clone(),
        format,
        junit: args.junit.clone(),
    }
}

fn report_request(command: &ReportCommand) -> ReportRequest {
    match command {
        ReportCommand::Junit { files, json } => ReportRequest::Junit {
            files: files.clone(),
            json: *json,
        },
        ReportCommand::Coverage { file, json } => ReportRequest::Coverage {
            file: file.clone(),
            json: *json,
        },
        ReportCommand::Sarif { file, json } => ReportRequest::Sarif {
            file: file.clone(),
            json: *json,
        },
    }
}

fn step_settings(args: &GithubArgs) -> StepSettings {
    StepSettings {
        dry_run: args.dry_run,
        max_iterations: args.max_iterations,
        budget_usd: args.budget_usd,
        trigger_phrase: args.trigger_phrase.clone(),
        label: args.label.clone(),
        bot_login: args.bot_login.clone(),
        allow_bots: args.allow_bots.clone(),
        job_minutes: args.job_minutes,
        out: args.out.clone(),
        pull_request_checks: match args.pull_request_checks {
            PullRequestChecksArg::Off => PullRequestChecks::Off,
            PullRequestChecksArg::PullRequest => PullRequestChecks::PullRequest,
            PullRequestChecksArg::All => PullRequestChecks::All,
        },
        pull_policy: PullPolicy {
            fix: match args.pull_request_fix {
                PullRequestFixArg::Stacked => FixPlace::Stacked,
                PullRequestFixArg::Push => FixPlace::HeadBranch,
            },
            drafts: args.pull_request_drafts,
            exclude: args
                .pull_request_exclude
                .iter()
                .map(|glob| glob.trim().to_owned())
                .filter(|glob| !glob.is_empty())
                .collect(),
        },
    }
}
