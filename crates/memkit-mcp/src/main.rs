fn main() {
    memkit_mcp::tool::main()
}
