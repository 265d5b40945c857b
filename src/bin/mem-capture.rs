fn main() {
    memkit::cli::main("mem-capture", memkit::cmd::capture::run)
}
