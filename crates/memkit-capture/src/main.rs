fn main() {
    memkit_core::cli::main("mem-capture", memkit_capture::tool::run)
}
