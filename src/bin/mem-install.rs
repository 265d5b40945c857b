fn main() {
    memkit::cli::main("mem-install", memkit::cmd::install::run)
}
