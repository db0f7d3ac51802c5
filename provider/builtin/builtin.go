package builtin

import (
	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Blank-importing this package registers the built-in provider, provider.DefaultProviderName,
// served by the in-memory fake cloud.
func init() {
	provider.Register(provider.DefaultProviderName, Backend(), provider.Options{})
}

// Backend is the backend of the built-in provider: the in-memory cloud of package fake,
// named fake.SectionName and described by the config's section of that name (see
// fake.Config; an empty section is an empty cloud). Its region defaults to the config's
// region.
func Backend() provider.Backend[fake.Config] {
	return provider.Backend[fake.Config]{
		Name: fake.SectionName,
		New: func(cfg *provider.Config, section fake.Config) (cloudapi.Client, error) {
			if section.Region == "" {
				section.Region = cfg.Region
			}
			return fake.New(section)
		},
	}
}
