fn main() {
    memkit_capture::cli::main("mem-capture", memkit_capture::cmd::capture::run)
}
