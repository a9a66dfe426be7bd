package cli

import (
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/trust"
)

// IdentityInForce returns set.Spec with the settings of mcpepoch.toml that
// decide what the identity covers (code, deps, lockfiles, data, env_files,
// env) held at the project's policy floor as a host holds them
// (trust.Floor.Reconcile), so that what record hashes into the manifest
// is what the host computes: a narrowing no person accepted is not
// applied here either. The floor file is only read, never written:
// raising or recording it is a host's. lockfilesFlag: --lockfile was
// given, which wins over the file and the floor, as for a host. With no
// floor yet (a first use, or no config directory) the file's settings
// stand, as the first host takes them; a floor file that cannot be read
// stands for the strictest (trust.StrictestIdentity), as for a host.
// The host recomputes the identity itself: this keeps the two from
// disagreeing, it guards nothing.
func IdentityInForce(set *config.Settings, lockfilesFlag bool) build.Spec {
	spec := set.Spec
	cfg := set.Config
	if cfg == nil {
		cfg = &config.Config{}
	}
	dir, err := trust.DefaultDir()
	if err != nil {
		return spec
	}
	eff := &config.Config{}
	switch f, err := trust.LoadFloor(dir, trust.FloorRoot(set.Root)); {
	case err != nil:
		trust.StrictestIdentity(cfg).SetIn(eff)
	case f == nil:
		return spec
	default:
		eff, _, _ = f.Reconcile(cfg, false)
	}
	spec.Code, spec.Deps, spec.Data, spec.EnvFiles, spec.EnvNames = eff.Code, eff.Deps, eff.Data, eff.EnvFiles, eff.Env
	if !lockfilesFlag {
		spec.Lockfiles = eff.Lockfiles
	}
	return spec
}
