//! The MCP side: each tool's schema and description for the model, mapped onto [`Memory`]'s
//! calls. A failure the model can act on is a tool result with isError; arguments that cannot
//! be right are a JSON-RPC invalid-params error.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use crate::memory::{Answer, Failure, Memory, SearchArgs};

/// A list given as a JSON array, or as one comma-separated string (models write both).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum List {
    Many(Vec<String>),
    One(String),
}

impl List {
    fn items(self) -> Vec<String> {
        match self {
            List::Many(v) => v,
            List::One(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
        }
        .into_iter()
        .filter(|x| !x.is_empty())
        .collect()
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for: words or a question, as you would ask a colleague.
    pub query: String,
    /// A project (its directory, root path or name) instead of the current one.
    pub project: Option<String>,
    /// Search every project; hits from other projects carry other_project and project_name.
    #[serde(default)]
    pub all_projects: bool,
    /// Only these types: decision, bugfix, feature, refactor, discovery, change, session, learning.
    #[serde(rename = "type")]
    pub kinds: Option<List>,
    /// Only memories made at or after this date (YYYY-MM-DD covers the whole day) or datetime.
    pub since: Option<String>,
    /// Only memories made at or before this date (whole day) or datetime.
    pub until: Option<String>,
    /// Files being worked on: memories that touched them rank higher (default: git's changed files).
    pub files: Option<List>,
    /// How many hits (default 10).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    /// The refs to read in full, as search, timeline and the context block print them: o17 (an
    /// observation), s4 (a session, with its observations), l3 (a learning).
    pub refs: List,
    /// Allow records of other projects than the current one.
    #[serde(default)]
    pub all_projects: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineParams {
    /// The moment to centre on: a ref (o17, s4) or a date or datetime; default now.
    pub around: Option<String>,
    /// A project (directory, root path or name) instead of the current one.
    pub project: Option<String>,
    /// Observations before that moment (default 5, at most 50).
    pub before: Option<usize>,
    /// Observations at or after it (default 5, at most 50).
    pub after: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveParams {
    /// The note: a fact, decision or gotcha worth remembering in later sessions. Secrets in it
    /// are redacted before it is stored.
    pub text: String,
    /// Tags, e.g. ["deploy", "ops"].
    pub tags: Option<List>,
    /// A project (name or directory) instead of the current one.
    pub project: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// A prompt or task description: returns only the memories clearly relevant to it. Leave
    /// it out for the block a new session starts with (files in play, recent sessions,
    /// functions changed, learnings, observations).
    pub prompt: Option<String>,
    /// A project (directory, root path or name) instead of the current one.
    pub project: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileHistoryParams {
    /// The file: an absolute path, or its ending such as src/auth.rs.
    pub path: String,
    /// A project (directory, root path or name) instead of the current one.
    pub project: Option<String>,
    /// Look in every project.
    #[serde(default)]
    pub all_projects: bool,
}

/// The server: one [`Memory`] shared by the calls of a session.
#[derive(Clone)]
pub struct Server {
    memory: Arc<Memory>,
    tool_router: ToolRouter<Server>,
}

/// The arguments as the tool's schema has them; anything else is a JSON-RPC invalid-params
/// error naming the tool and the field (rmcp would make it a tool result instead).
fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| ErrorData::invalid_params(format!("{tool}: {e}"), None))
}

fn reply(answer: Answer) -> Result<CallToolResult, ErrorData> {
    match answer {
        Ok(v) => Ok(CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string_pretty(&v).unwrap_or_default(),
        )])),
        Err(Failure::BadArguments(m)) => Err(ErrorData::invalid_params(m, None)),
        Err(Failure::Refused(m)) => Ok(CallToolResult::error(vec![ContentBlock::text(m)])),
    }
}

#[tool_router]
impl Server {
    pub fn new(memory: Memory) -> Server {
        Server {
            memory: Arc::new(memory),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        input_schema = schema_for_type::<SearchParams>(),
        description = "Search memkit's memory of past Claude Code sessions in this project: decisions, bug fixes, features, discoveries, session summaries and learnings. Hybrid BM25 + vector ranking. Returns refs (o17, s4, l3), titles, scores and one line each; pass refs to get for the full records."
    )]
    async fn search(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: SearchParams = parse("search", args)?;
        reply(self.memory.search(SearchArgs {
            query: p.query,
            project: p.project,
            all_projects: p.all_projects,
            kinds: p.kinds.map(List::items).unwrap_or_default(),
            since: p.since,
            until: p.until,
            files: p.files.map(List::items),
            limit: p.limit,
        }))
    }

    #[tool(
        input_schema = schema_for_type::<GetParams>(),
        description = "Read memories in full by ref: o17 an observation (summary, detail, facts, files, functions), s4 a session (summary and its observations), l3 a learning. Refs come from search, timeline and the context block."
    )]
    async fn get(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: GetParams = parse("get", args)?;
        reply(self.memory.get(&p.refs.items(), p.all_projects))
    }

    #[tool(
        input_schema = schema_for_type::<TimelineParams>(),
        description = "What happened in this project around a moment: the observations just before and after a ref (o17, s4) or a date, oldest first, with the sessions they belong to. Without around: the latest ones."
    )]
    async fn timeline(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: TimelineParams = parse("timeline", args)?;
        reply(
            self.memory
                .timeline(p.project.as_deref(), p.around.as_deref(), p.before, p.after),
        )
    }

    #[tool(
        input_schema = schema_for_type::<SaveParams>(),
        description = "Save a note to memkit's memory for later sessions of this project (a decision, a convention, a gotcha). Redacted like every capture; searchable a few seconds later."
    )]
    async fn save(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: SaveParams = parse("save", args)?;
        let tags = p.tags.map(List::items).unwrap_or_default();
        reply(self.memory.save(&p.text, &tags, p.project.as_deref()))
    }

    #[tool(
        input_schema = schema_for_type::<ContextParams>(),
        description = "memkit's context for this project: without prompt, the block a new session starts with (files in play, recent sessions, functions changed, learnings, notable observations); with prompt, only the memories clearly relevant to that text, or nothing."
    )]
    async fn context(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: ContextParams = parse("context", args)?;
        reply(
            self.memory
                .context(p.project.as_deref(), p.prompt.as_deref()),
        )
    }

    #[tool(
        input_schema = schema_for_type::<FileHistoryParams>(),
        description = "The history of one file in memkit's memory: the observations that changed it and those that read it (refs, types, titles, dates) and the functions changed in it. Use before editing a file to learn what was done to it and why."
    )]
    async fn file_history(
        &self,
        Parameters(args): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let p: FileHistoryParams = parse("file_history", args)?;
        reply(
            self.memory
                .file_history(&p.path, p.project.as_deref(), p.all_projects),
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memkit", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "memkit remembers past Claude Code sessions of this project. search finds memories by meaning; get reads refs (o17, s4, l3) in full; timeline shows what happened around a moment; file_history tells what was done to a file; context gives the session-start summary; save keeps a note for later sessions.",
            )
    }
}

/// Serves one session on stdin and stdout until the client closes stdin.
pub async fn serve(memory: Memory) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service = match Server::new(memory).serve(rmcp::transport::stdio()).await {
        Ok(s) => s,
        // The client went away before the handshake: nothing to serve, nothing wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    service.waiting().await?;
    Ok(())
}
