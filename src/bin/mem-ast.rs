memkit::batch_allocator!();

fn main() {
    batch_allocator_setup();
    memkit::cli::main("mem-ast", memkit::cmd::ast::run)
}
