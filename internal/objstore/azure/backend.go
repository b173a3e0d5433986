package azure

import (
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure/azuri"
)

// Scheme is the Azure backend's, for az:// and abfss:// roots alike.
const Scheme = azuri.Scheme

// Backend describes the Azure Blob Storage backend to the registry (package
// all): its scheme, its storage options (the secret ones marked), their
// validation, and the classification the retry layer uses.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:  Scheme,
		Forms:   azuri.Forms(),
		Name:    "Azure Blob Storage",
		Options: storageOptions(),
		// What tokenCredential falls back to.
		DefaultCredentials: "DefaultAzureCredential (environment, AKS workload identity, managed identity, Azure CLI)",
		CheckOptions: func(options map[string]string) error {
			_, err := ParseOptions(options)
			return err
		},
		Open:        objstore.Opener(Open),
		IsTransient: IsTransient,
		IsThrottle:  IsThrottle,
		Operation:   Operation,
		// Date and Last-Modified read to the second.
		ClockResolution: objstore.TimeResolution,
	}
}
