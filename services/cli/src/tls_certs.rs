//! `boardcast tls-certs`: the hall's private certificate authority and a certificate per host,
//! for NATS (clients and routes), gRPC and the dashboard.

use std::path::PathBuf;

use boardcast_kit::tls::{CA_CERT_FILE, CA_KEY_FILE, Host, make_certificates};
use clap::Args;

#[derive(Args, Debug)]
#[command(
    long_about = "Make the hall's certificate authority (once) and a certificate for each host, \
signed by it.\n\nWritten into --dir: ca.pem (give it to every machine: every program trusts it \
and nothing else), ca.key (the authority's key, mode 0600: keep it here, off the servers), and \
per host NAME.pem with NAME.key (mode 0600), naming the host, its addresses, localhost and the \
loopback addresses. An authority already in --dir is used again, so hosts can be added later. \
The certificates serve NATS (clients and routes: nodes check each other's, so only the hall's \
servers join the cluster), gRPC and the arbiters' dashboard."
)]
pub struct TlsCertsArgs {
    /// Where the authority is (or is made) and the certificates are written.
    #[arg(long, default_value = "var/tls")]
    dir: PathBuf,
    /// A host to certify: NAME, or NAME=ADDRESS,ADDRESS for the IP addresses it is reached at
    /// too. Repeat for each host.
    #[arg(long = "host", value_name = "NAME[=ADDRESSES]", required = true)]
    hosts: Vec<Host>,
    /// How many days the host certificates are valid (the authority: ten years).
    #[arg(long, default_value_t = 825)]
    days: u32,
}

pub fn run(args: TlsCertsArgs) -> anyhow::Result<()> {
    let written = make_certificates(&args.dir, &args.hosts, args.days)?;
    let dir = args.dir.display();
    if written.new_authority {
        println!("made the hall's authority: {dir}/{CA_CERT_FILE} (its key {dir}/{CA_KEY_FILE})");
    } else {
        println!("signed with the authority in {dir}/{CA_CERT_FILE}");
    }
    for (cert, key) in &written.hosts {
        println!("{} with its key {}", cert.display(), key.display());
    }
    Ok(())
}
