fn main() {
    memkit::cli::main("mem-eval", memkit::cmd::eval::run)
}
