// Tables in LanceDB namespaces (the manifest layout, namespace_test.go and
// the namespaced cleanup twins of lance_cleanup_test.go): a table spec may
// carry a namespace path, ["tenant_a"] or ["tenant_a", "sub"]; the root
// namespace is [] or absent.

// ensureNamespace creates path and every namespace above it that is not
// there yet. Another table's creation may make one at the same moment (in
// this process or another): "already exists" and "concurrently created"
// both mean it is there.
export async function ensureNamespace(db, path) {
  for (let i = 1; i <= (path?.length ?? 0); i++) {
    try {
      await db.createNamespace(path.slice(0, i));
    } catch (e) {
      if (!/already exists|concurrently created/i.test(String(e?.message ?? e))) throw e;
    }
  }
}

// openIn opens table name of namespace path (the root's when empty).
export function openIn(db, name, path) {
  return path?.length ? db.openTable(name, path) : db.openTable(name);
}

// createIn creates table name in namespace path (made first when missing).
export async function createIn(db, name, data, path, options) {
  if (!path?.length) return db.createTable(name, data, options);
  await ensureNamespace(db, path);
  return db.createTable(name, data, path, options);
}

// namespacesOf answers listNamespaces's names whatever shape the client
// returns ({namespaces: [...]} in 0.39).
export function namespacesOf(res) {
  return Array.isArray(res) ? res : (res?.namespaces ?? []);
}
