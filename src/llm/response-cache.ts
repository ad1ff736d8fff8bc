import Database from "better-sqlite3";
import { createHash } from "node:crypto";
import { DataError } from "../core/index.ts";
import type { ChatRequest, ChatResponse } from "./chat-model.ts";

/**
 * A response cache in SQLite keyed by a hash of (model id, request), so a run can be replayed
 * exactly and a resumed run does not pay twice. Only successful responses are stored.
 */
export class ResponseCache {
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement;
  private readonly putStmt: Database.Statement;

  constructor(readonly path: string) {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout: 5000 });
      db.pragma("journal_mode = WAL");
      db.exec("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, created_at TEXT NOT NULL)");
    } catch (e) {
      // A file that opened but is no database stays closed (not held open by a process that goes on).
      db?.close();
      throw new DataError(`cannot open the response cache: ${(e as Error).message}`, { file: path }, e);
    }
    this.db = db;
    this.getStmt = this.db.prepare("SELECT response FROM responses WHERE key = ?");
    this.putStmt = this.db.prepare("INSERT OR REPLACE INTO responses(key, response, created_at) VALUES (?, ?, ?)");
  }

  static key(modelId: string, request: ChatRequest): string {
    return createHash("sha256")
      .update(JSON.stringify([modelId, request]))
      .digest("hex");
  }

  get(key: string): ChatResponse | undefined {
    const row = this.getStmt.get(key) as { response: string } | undefined;
    return row ? (JSON.parse(row.response) as ChatResponse) : undefined;
  }

  put(key: string, response: ChatResponse): void {
    this.putStmt.run(key, JSON.stringify(response), new Date().toISOString());
  }

  close(): void {
    this.db.close();
  }
}
