fn main() {
    memkit::cli::main("mem", memkit::cmd::mem::run)
}
