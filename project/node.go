package project

import (
	"encoding/json"
	"errors"

	"github.com/mcpepoch/mcpepoch/internal/jsonc"
)

// Package is what package.json says about running and building the server.
type Package struct {
	Name    string
	Type    string            // "module" or "commonjs" ("" is commonjs)
	Main    string            // as written
	Bin     map[string]string // command name → path; a string bin is keyed by Name
	Scripts map[string]string
	// Deps holds dependencies and devDependencies together: name → range.
	Deps map[string]string
}

// TSConfig is what tsconfig.json says about the compiler's output. It is
// read as the TypeScript compiler reads it: comments and trailing commas
// allowed. "extends" is not followed.
type TSConfig struct {
	OutDir        string // compilerOptions.outDir as written, "" when unset
	RootDir       string // compilerOptions.rootDir
	NoEmitOnError bool   // compilerOptions.noEmitOnError
	NoEmit        bool   // compilerOptions.noEmit
	Extends       string // as written; its settings are not read
}

func (p *Project) readPackage() error {
	const rel = "package.json"
	b, err := p.readFile(rel)
	if err != nil || b == nil {
		return err
	}
	var raw struct {
		Name            string            `json:"name"`
		Type            string            `json:"type"`
		Main            string            `json:"main"`
		Bin             json.RawMessage   `json:"bin"`
		Scripts         map[string]string `json:"scripts"`
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return p.fileError(rel, err)
	}
	pkg := &Package{Name: raw.Name, Type: raw.Type, Main: raw.Main, Scripts: raw.Scripts, Deps: map[string]string{}, Bin: map[string]string{}}
	for k, v := range raw.DevDependencies {
		pkg.Deps[k] = v
	}
	for k, v := range raw.Dependencies {
		pkg.Deps[k] = v
	}
	if len(raw.Bin) > 0 && string(raw.Bin) != "null" {
		var one string
		if json.Unmarshal(raw.Bin, &one) == nil {
			pkg.Bin[raw.Name] = one
		} else if err := json.Unmarshal(raw.Bin, &pkg.Bin); err != nil {
			return p.fileError(rel, errors.New(`"bin" is neither a path nor an object of paths`))
		}
	}
	p.Package = pkg
	return nil
}

func (p *Project) readTSConfig() error {
	const rel = "tsconfig.json"
	b, err := p.readFile(rel)
	if err != nil || b == nil {
		return err
	}
	var raw struct {
		Extends         json.RawMessage `json:"extends"`
		CompilerOptions struct {
			OutDir        string `json:"outDir"`
			RootDir       string `json:"rootDir"`
			NoEmitOnError bool   `json:"noEmitOnError"`
			NoEmit        bool   `json:"noEmit"`
		} `json:"compilerOptions"`
	}
	if err := json.Unmarshal(jsonc.Strip(b), &raw); err != nil {
		return p.fileError(rel, err)
	}
	tc := &TSConfig{
		OutDir: raw.CompilerOptions.OutDir, RootDir: raw.CompilerOptions.RootDir,
		NoEmitOnError: raw.CompilerOptions.NoEmitOnError, NoEmit: raw.CompilerOptions.NoEmit,
	}
	var ext string
	if json.Unmarshal(raw.Extends, &ext) == nil {
		tc.Extends = ext
	}
	p.TSConfig = tc
	return nil
}
