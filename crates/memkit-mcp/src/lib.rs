//! mem-mcp, memkit's MCP server: `memory` answers each tool call from the store (the same
//! domain calls the command-line tools make), `server` is the MCP side (schemas, descriptions,
//! errors, the stdio transport), `register` is Claude Code's record of MCP servers, and `tool`
//! the binary's arguments and run. tokio and rmcp stay in this crate: the hook binaries link
//! neither.

pub mod memory;
pub mod register;
pub mod server;
pub mod tool;
