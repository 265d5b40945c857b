fn main() {
    memkit::cli::main("mem-install", |args, io| {
        memkit::cmd::install::run(args, io, memkit::cmd::ALL)
    })
}
