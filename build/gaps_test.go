package build

import (
	"path/filepath"
	"strings"
	"testing"
)

// idWantOneChange fails unless Changes(prev, next) is one input whose
// name contains sub.
func idWantOneChange(t *testing.T, prev, next *Identity, sub string) {
	t.Helper()
	got := Changes(prev, next)
	if len(got) != 1 || !strings.Contains(got[0], sub) {
		t.Errorf("changes %q, want one naming %s", got, sub)
	}
}

// Node resolves a package the project lacks from the node_modules of every
// directory above it: one in a parent of the project root is part of the
// identity, so rewriting it is new code.
func TestIdentityParentNodeModules(t *testing.T) {
	t.Parallel()
	root := idTempDir(t)
	dir := filepath.Join(root, "proj")
	idWrite(t, root, idFile{path: "node_modules/helper/index.js", content: "module.exports = 'good';\n"})
	idWrite(t, dir, idFile{path: "dist/server.js", content: "console.log(require('helper'));\n"})
	spec := idSpec(dir, idFakeBin(t, "a"))
	before := idCompute(t, spec)
	idWrite(t, root, idFile{path: "node_modules/helper/index.js", content: "module.exports = 'changed';\n"})
	idWantOneChange(t, before, idCompute(t, spec), "node_modules")
}
