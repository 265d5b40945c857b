fn main() {
    memkit::cli::main("mem", |args, io| {
        memkit::cmd::mem::run(args, io, memkit::cmd::ALL)
    })
}
