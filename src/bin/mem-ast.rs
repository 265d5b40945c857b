fn main() {
    memkit::cli::main("mem-ast", memkit::cmd::ast::run)
}
