//! The deployment files stay true to the programs: each service's environment file
//! (`deploy/config/*.env`) names every option the program reads from the environment and nothing
//! it does not, and each systemd unit (`deploy/systemd/`) reads its file and runs its program
//! (checked with `systemd-analyze verify` where the machine has it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use boardcast_testkit::program;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path)
}

/// The environment variables a program's `--help` names (`[env: NAME=…]`).
fn help_env(program_name: &str, args: &[&str]) -> anyhow::Result<BTreeSet<String>> {
    let output = Command::new(program(program_name)?)
        .args(args)
        .arg("--help")
        .output()?;
    anyhow::ensure!(output.status.success(), "{program_name} --help failed");
    let help = String::from_utf8(output.stdout)?;
    Ok(help
        .split("[env: ")
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect())
}

/// The `BOARDCAST_*` settings of an environment file, set or commented out.
fn file_env(file: &str) -> anyhow::Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(deploy(file))?;
    Ok(text
        .lines()
        .map(|line| line.trim_start_matches('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(name, _)| name.trim())
        .filter(|name| name.starts_with("BOARDCAST_") && !name.contains(' '))
        .map(str::to_owned)
        .collect())
}

#[test]
fn every_option_from_the_environment_is_in_its_file_and_nothing_else() -> anyhow::Result<()> {
    let cases: [(&str, &[&str], &str, &[&str]); 4] = [
        (
            "boardcast-game-service",
            &[],
            "config/game-service.env",
            &[],
        ),
        (
            "boardcast-broadcast-service",
            &[],
            "config/broadcast-service.env",
            &[],
        ),
        (
            "boardcast-arbiter-service",
            &[],
            "config/arbiter-service.env",
            &[],
        ),
        // The gateway unit passes the port and more options on the command line.
        (
            "boardcast",
            &["gateway", "serial"],
            "config/gateway.env",
            &["BOARDCAST_GATEWAY_PORT", "BOARDCAST_GATEWAY_OPTIONS"],
        ),
    ];
    for (program_name, args, file, for_the_unit) in cases {
        let read = help_env(program_name, args)?;
        let documented = file_env(file)?;
        assert!(
            !read.is_empty(),
            "{program_name} reads nothing from the environment?"
        );
        let missing: Vec<_> = read.difference(&documented).collect();
        assert!(missing.is_empty(), "{file} lacks {missing:?}");
        let unknown: Vec<_> = documented
            .iter()
            .filter(|name| !read.contains(*name) && !for_the_unit.contains(&name.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} names {unknown:?}, which {program_name} does not read"
        );
    }
    Ok(())
}

#[test]
fn each_unit_reads_its_file_and_runs_its_program() -> anyhow::Result<()> {
    let units = [
        (
            "boardcast-game-service.service",
            "game-service.env",
            "boardcast-game-service",
        ),
        (
            "boardcast-broadcast-service.service",
            "broadcast-service.env",
            "boardcast-broadcast-service",
        ),
        (
            "boardcast-arbiter-service.service",
            "arbiter-service.env",
            "boardcast-arbiter-service",
        ),
        ("boardcast-gateway@.service", "gateway-%i.env", "boardcast"),
    ];
    let verify = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok();
    let dir = tempfile::tempdir()?;
    for (unit, env_file, program_name) in units {
        let text = std::fs::read_to_string(deploy(&format!("systemd/{unit}")))?;
        assert!(
            text.contains(&format!("EnvironmentFile=/etc/boardcast/{env_file}")),
            "{unit} does not read {env_file}"
        );
        let exec = format!("ExecStart=/usr/local/bin/{program_name}");
        assert!(text.contains(&exec), "{unit} does not run {program_name}");
        if !verify {
            continue;
        }
        // The unit as installed, with the program where this build has it.
        let installed = text.replace(
            &exec,
            &format!("ExecStart={}", program(program_name)?.display()),
        );
        let name = unit.replace("@.", "@hall-a-1.");
        let path = dir.path().join(&name);
        std::fs::write(&path, installed)?;
        let output = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&path)
            .output()?;
        let complaints = String::from_utf8_lossy(&output.stderr);
        // Only what the unit file itself gets wrong; users and groups belong to the machine.
        let own: Vec<&str> = complaints
            .lines()
            .filter(|line| {
                line.contains(&name) && !line.contains("user") && !line.contains("group")
            })
            .collect();
        assert!(own.is_empty(), "{unit}: {own:?}");
    }
    if !verify {
        eprintln!("systemd-analyze is not on this machine: the units were not verified");
    }
    Ok(())
}
