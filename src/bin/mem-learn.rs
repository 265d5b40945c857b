fn main() {
    memkit::cli::main("mem-learn", memkit::cmd::learn::run)
}
