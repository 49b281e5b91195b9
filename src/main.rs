use std::process::ExitCode;

fn main() -> ExitCode {
    oyster::run(std::env::args_os())
}
