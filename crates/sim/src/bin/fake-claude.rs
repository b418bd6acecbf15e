//! `fake-claude`: the simulated agent binary; argv and stdio as the real `claude` CLI.

fn main() {
    let code = nucleic_sim::run_cli(std::env::args().skip(1).collect());
    std::process::exit(code);
}
