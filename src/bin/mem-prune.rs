fn main() {
    memkit::cli::main("mem-prune", memkit::cmd::prune::run)
}
