//! The tantivy BM25 index: English-stemmed text fields plus raw filter fields.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::doc::{Doc, expected_keys, load_docs, load_sessions, session_hash};
use super::run::{Check, MAX_THREADS, Options, Report, index_err, plan};
use super::state::{Layout, State};
use memkit_core::Result;

/// The analysers of the two text fields: words split on anything but letters and digits,
/// lower-cased and folded to ASCII (a query for "Aschenbrodel" finds "Aschenbrödel", as SQLite
/// FTS5's unicode61 does), then stemmed (English) or not.
const STEMMED: &str = "memkit_stemmed";
const AS_WRITTEN: &str = "memkit_words";

/// Registers the analysers on `index` (they live in code, not in the index's files).
fn register_analysers(index: &Index) {
    use tantivy::tokenizer::{
        AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
        TextAnalyzer,
    };
    let words = || {
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(40))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
    };
    index.tokenizers().register(AS_WRITTEN, words().build());
    index.tokenizers().register(
        STEMMED,
        words().filter(Stemmer::new(Language::English)).build(),
    );
}

/// The schema's fields by role.
#[derive(Debug, Clone)]
pub struct Fields {
    pub key: Field,
    pub project: Field,
    pub kind: Field,
    pub session: Field,
    pub tag: Field,
    pub created: Field,
    /// Everything searchable, as one field: one BM25 over one text, so that a word the title,
    /// the summary and the concepts all repeat is not counted once per field. English-stemmed.
    pub text: Field,
    /// The same text, lower-cased words as written: a word matched as written scores in both
    /// fields, one matched only through its stem in one (stemming alone conflates names).
    pub exact: Field,
}

pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let key = b.add_u64_field("key", INDEXED | FAST | STORED);
    let project = b.add_text_field("project", STRING);
    let kind = b.add_text_field("kind", STRING);
    let session = b.add_text_field("session", STRING);
    let tag = b.add_text_field("tag", STRING);
    let created = b.add_i64_field("created", INDEXED | FAST);
    let analysed = |tokenizer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let text = b.add_text_field("text", analysed(STEMMED));
    let exact = b.add_text_field("exact", analysed(AS_WRITTEN));
    (
        b.build(),
        Fields {
            key,
            project,
            kind,
            session,
            tag,
            created,
            text,
            exact,
        },
    )
}

/// An open BM25 index for searching.
pub struct Bm25 {
    pub index: Index,
    pub reader: IndexReader,
    pub fields: Fields,
}

impl Bm25 {
    /// The analyser of the text fields (English stemming): how queries are turned into terms.
    pub fn analyzer(&self) -> Result<tantivy::tokenizer::TextAnalyzer> {
        self.analyzer_of(self.fields.text)
    }

    /// The analyser of `field` (how a query is turned into its terms).
    pub fn analyzer_of(&self, field: Field) -> Result<tantivy::tokenizer::TextAnalyzer> {
        self.index
            .tokenizer_for_field(field)
            .map_err(|e| index_err("tokenizer", e))
    }

    /// Opens the index read-only (memory-mapped); an error when missing or unreadable.
    pub fn open(dir: &Path) -> Result<Bm25> {
        if !dir.join("meta.json").exists() {
            return Err(index_err("bm25 index", "missing"));
        }
        let index = Index::open_in_dir(dir).map_err(|e| index_err("bm25 index", e))?;
        register_analysers(&index);
        let (want, fields) = schema();
        if index.schema() != want {
            return Err(index_err("bm25 index", "schema differs"));
        }
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| index_err("bm25 index", e))?;
        Ok(Bm25 {
            index,
            reader,
            fields,
        })
    }

    /// Every key in the index with how many live documents hold it.
    pub fn keys(&self) -> Result<HashMap<u64, u32>> {
        let searcher = self.reader.searcher();
        let mut out = HashMap::new();
        for seg in searcher.segment_readers() {
            let col = seg
                .fast_fields()
                .u64("key")
                .map_err(|e| index_err("bm25 index", e))?;
            for doc in seg.doc_ids_alive() {
                if let Some(k) = col.first(doc) {
                    *out.entry(k).or_insert(0) += 1;
                }
            }
        }
        Ok(out)
    }
}

fn to_doc(f: &Fields, d: &Doc) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_u64(f.key, d.key);
    if let Some(p) = &d.project {
        doc.add_text(f.project, p);
    }
    doc.add_text(f.kind, &d.kind);
    if let Some(s) = &d.session_id {
        doc.add_text(f.session, s);
    }
    for t in &d.tags {
        doc.add_text(f.tag, t.to_lowercase());
    }
    doc.add_i64(f.created, d.created_ms);
    let text = d.search_text();
    if !text.is_empty() {
        doc.add_text(f.text, &text);
        doc.add_text(f.exact, text);
    }
    doc
}

fn create(dir: &Path) -> Result<Index> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let (schema, _) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(|e| index_err("bm25 index", e))?;
    register_analysers(&index);
    Ok(index)
}

/// Puts the finished index `new` in the place of `dir`. Until then a rebuild that fails (or is
/// killed) leaves the previous index as it was; searchers holding its files keep reading them.
fn replace(new: &Path, dir: &Path) -> Result<()> {
    let old = dir.with_file_name("bm25.old");
    if old.exists() {
        std::fs::remove_dir_all(&old)?;
    }
    if dir.exists() {
        std::fs::rename(dir, &old)?;
    }
    std::fs::rename(new, dir)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

/// Brings the BM25 index up to date; returns the report and every distinct tag.
pub fn update(
    conn: &Connection,
    layout: &Layout,
    state: &mut State,
    untrusted: bool,
    opts: &Options,
) -> Result<(Report, Vec<String>)> {
    let dir = layout.bm25();
    let mut rep = Report {
        name: "bm25".into(),
        ..Report::default()
    };
    // Set when only the observations changed since the last run need reading (`recent_only`),
    // with how many the index held.
    let mut recent = None;
    let existing = if opts.rebuild {
        rep.reason = Some("asked".into());
        None
    } else if untrusted {
        rep.reason = Some(if dir.exists() {
            "no index state".into()
        } else {
            "missing".into()
        });
        None
    } else {
        let opened = Bm25::open(&dir).and_then(|b| match recent_only(conn, &b, state)? {
            Some((rows, held, known)) => {
                recent = Some((rows, held));
                Ok((b, known))
            }
            None => b.keys().map(|k| (b, k)),
        });
        match opened {
            Ok(x) => Some(x),
            Err(e) => {
                rep.reason = Some(e.to_string());
                None
            }
        }
    };
    let (index, have, fresh) = match existing {
        Some((b, keys)) => (b.index, keys, None),
        None => {
            rep.rebuilt = true;
            state.tags.clear();
            state.obs_updated_at = None;
            state.sessions.clear();
            // Built beside the current index and swapped in once committed.
            let new = dir.with_file_name("bm25.new");
            (create(&new)?, HashMap::new(), Some(new))
        }
    };
    let (_, fields) = schema();
    // Observations: the ones missing from the index, plus the ones changed since the last run.
    let (rows, held) = match recent {
        Some((rows, held)) => (rows, Some(held)),
        None => (memkit_core::store::observations::ids_updated(conn)?, None),
    };
    // Several writer threads only to fill an empty index (`have` lists only the changed rows
    // when `held` is known).
    let threads = if have.is_empty() && held.unwrap_or(0) == 0 {
        opts.threads.clamp(1, MAX_THREADS)
    } else {
        1
    };
    let mut writer: IndexWriter<TantivyDocument> = index
        .writer_with_num_threads(threads, opts.heap.max((15 << 20) * threads))
        .map_err(|e| index_err("bm25 writer", e))?;
    // A filled index is merged whole after its commit; merging as it fills would race that.
    let merge_whole = threads > 1 && !opts.keep_segments;
    if merge_whole || opts.keep_segments {
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    } else {
        writer.set_merge_policy(Box::new(merge_policy()));
    }
    let rows = rows
        .into_iter()
        .map(|(id, upd)| (memkit_core::store::vector_key("observation", id), upd, id));
    let plan = plan(
        rows,
        |k| have.contains_key(&k),
        state.obs_updated_at.clone(),
    );
    let obs_docs = match held {
        Some(h) => h + plan.todo.iter().filter(|c| !c.indexed).count() as u64,
        None => plan.keys.len() as u64,
    };
    let mut db_keys = plan.keys;
    // Known tags: those of the records (re)indexed now, plus those known before (a tag that
    // disappears stays known until the next rebuild: harmless for filtering).
    let mut tags: HashSet<String> = state.tags.iter().cloned().collect();
    let mut todo: Vec<i64> = Vec::with_capacity(plan.todo.len());
    for c in plan.todo {
        if c.indexed {
            rep.updated += 1;
        } else {
            rep.added += 1;
        }
        todo.push(c.row);
    }
    for (i, chunk) in todo.chunks(2000).enumerate() {
        opts.report("bm25", (i * 2000) as u64, todo.len() as u64);
        for o in memkit_core::store::observations::by_ids(conn, chunk)? {
            let d = Doc::of_observation(o);
            tags.extend(d.tags.iter().map(|t| t.to_lowercase()));
            if have.contains_key(&d.key) {
                writer.delete_term(Term::from_field_u64(fields.key, d.key));
            }
            writer
                .add_document(to_doc(&fields, &d))
                .map_err(|e| index_err("bm25 add", e))?;
        }
    }
    opts.report("bm25", todo.len() as u64, todo.len() as u64);
    // Sessions: few, compared by content hash.
    let mut seen_sessions = std::collections::BTreeMap::new();
    for d in load_sessions(conn)? {
        db_keys.insert(d.key);
        let h = session_hash(&d);
        let known = have.contains_key(&d.key);
        if !known || state.sessions.get(&d.id) != Some(&h) {
            if known {
                writer.delete_term(Term::from_field_u64(fields.key, d.key));
                rep.updated += 1;
            } else {
                rep.added += 1;
            }
            writer
                .add_document(to_doc(&fields, &d))
                .map_err(|e| index_err("bm25 add", e))?;
        }
        seen_sessions.insert(d.id, h);
    }
    // Whatever the index holds that the database no longer does, and duplicates.
    for (k, n) in &have {
        if !db_keys.contains(k) {
            writer.delete_term(Term::from_field_u64(fields.key, *k));
            rep.removed += 1;
        } else if *n > 1 {
            // Re-add the one true copy.
            writer.delete_term(Term::from_field_u64(fields.key, *k));
            for d in load_docs(conn, &[*k])? {
                writer
                    .add_document(to_doc(&fields, &d))
                    .map_err(|e| index_err("bm25 add", e))?;
            }
            rep.updated += 1;
        }
    }
    writer.commit().map_err(|e| index_err("bm25 commit", e))?;
    if merge_whole {
        // A filled index leaves a segment per thread and memory budget (eight at a million
        // records), and a search pays for each: its files opened, its terms looked up. One
        // segment made BM25 at a million 24% faster (7.3 → 5.5 ms p50, one project) for 5 s
        // of merging.
        merge_segments(&index, &mut writer, 2)?;
    }
    writer
        .wait_merging_threads()
        .map_err(|e| index_err("bm25 merge", e))?;
    drop(index);
    if let Some(new) = fresh {
        replace(&new, &dir)?;
    }
    state.obs_updated_at = plan.upto;
    state.docs = obs_docs + seen_sessions.len() as u64;
    state.sessions = seen_sessions;
    rep.docs = state.docs;
    let mut tags: Vec<String> = tags.into_iter().collect();
    tags.sort();
    Ok((rep, tags))
}

/// The observations changed since the last run, when they are all an incremental run needs to
/// read: none was deleted, which is when the index's observations and the new ones add up to
/// the table's count. The index's key list is then never read (a million keys took a second
/// and more). With how many observations the index held, and the keys it holds of those
/// changed rows and of sessions.
type Recent = (Vec<(i64, String)>, u64, HashMap<u64, u32>);

fn recent_only(conn: &Connection, b: &Bm25, state: &State) -> Result<Option<Recent>> {
    let held = state.docs.checked_sub(state.sessions.len() as u64);
    let (Some(since), Some(held)) = (&state.obs_updated_at, held) else {
        return Ok(None);
    };
    let rows = memkit_core::store::observations::ids_updated_since(conn, since)?;
    let searcher = b.reader.searcher();
    let mut known = HashMap::new();
    for (id, _) in &rows {
        let k = memkit_core::store::vector_key("observation", *id);
        let n = searcher
            .doc_freq(&Term::from_field_u64(b.fields.key, k))
            .map_err(|e| index_err("bm25 index", e))?;
        if n > 0 {
            known.insert(k, 1);
        }
    }
    let new = (rows.len() - known.len()) as u64;
    // The sessions it holds, as the last run left them (compared by content hash below).
    for id in state.sessions.keys() {
        known.insert(memkit_core::store::vector_key("session", *id), 1);
    }
    let total = memkit_core::store::observations::count(conn, None)? as u64;
    Ok((held + new == total).then_some((rows, held, known)))
}

/// Merges every segment into one and deletes the files no longer used: a deleted or replaced
/// document, and its terms, stay in its segment's files until a merge drops them (re-redaction
/// must leave no old text behind). A missing index is left missing.
pub fn compact(dir: &Path) -> Result<()> {
    if !dir.join("meta.json").exists() {
        return Ok(());
    }
    let index = Index::open_in_dir(dir).map_err(|e| index_err("bm25 index", e))?;
    register_analysers(&index);
    let mut writer: IndexWriter<TantivyDocument> = index
        .writer_with_num_threads(1, 15 << 20)
        .map_err(|e| index_err("bm25 writer", e))?;
    // One segment is merged too: it drops the segment's deleted documents.
    merge_segments(&index, &mut writer, 1)?;
    writer
        .wait_merging_threads()
        .map_err(|e| index_err("bm25 merge", e))?;
    Ok(())
}

/// How an index that grows run by run (a segment each) keeps few segments: two segments of
/// sizes within 4× of each other are merged (tantivy's default waits for eight within 1.7×).
/// A segment costs every search its files and term lookups. After 40 runs of 1,000 records on
/// a million, the default had left 7 segments, this policy 2: BM25 one project 8.9 → 6.2 ms
/// p50, same hits, and no run took over 0.41 s. A record is rewritten about once per 4× of
/// growth.
fn merge_policy() -> tantivy::indexer::LogMergePolicy {
    let mut p = tantivy::indexer::LogMergePolicy::default();
    p.set_min_num_segments(2);
    p.set_level_log_size(2.0);
    p
}

/// Merges every segment of `index` into one when there are `at_least` of them (at least 1),
/// and deletes the files no longer used.
fn merge_segments(
    index: &Index,
    writer: &mut IndexWriter<TantivyDocument>,
    at_least: usize,
) -> Result<()> {
    let ids = index
        .searchable_segment_ids()
        .map_err(|e| index_err("bm25 segments", e))?;
    if ids.len() >= at_least.max(1) {
        writer
            .merge(&ids)
            .wait()
            .map_err(|e| index_err("bm25 merge", e))?;
    }
    writer
        .garbage_collect_files()
        .wait()
        .map_err(|e| index_err("bm25 cleanup", e))?;
    Ok(())
}

/// Compares the BM25 index's keys with the database.
pub fn check(conn: &Connection, layout: &Layout) -> Result<Check> {
    let mut c = Check {
        name: "bm25".into(),
        ..Check::default()
    };
    let want: HashSet<u64> = expected_keys(conn)?.into_iter().collect();
    c.expected = want.len() as u64;
    let have = match Bm25::open(&layout.bm25()).and_then(|b| b.keys()) {
        Ok(h) => h,
        Err(e) => {
            c.error = Some(e.to_string());
            c.missing = want.iter().copied().collect();
            c.missing.sort();
            return Ok(c);
        }
    };
    c.indexed = have.values().map(|n| *n as u64).sum();
    c.missing = want
        .iter()
        .filter(|k| !have.contains_key(k))
        .copied()
        .collect();
    c.extra = have
        .iter()
        .filter(|(k, n)| !want.contains(k) || **n > 1)
        .map(|(k, _)| *k)
        .collect();
    c.missing.sort();
    c.extra.sort();
    Ok(c)
}
