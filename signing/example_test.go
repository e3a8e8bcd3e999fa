package signing_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tradewire/tradewire/signing"
)

// Sign the venue's published GET example and print the headers.
func ExampleSigner_SetHeaders() {
	key, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		panic(err)
	}
	signer, err := signing.New("rh-api-6148effc-c0b1-486c-8940-a1d099456be6", key)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	signer.SetHeaders(h, time.Unix(1698708981, 0), "GET", "/api/v1/crypto/trading/accounts/", nil)
	fmt.Println(h.Get("x-timestamp"))
	fmt.Println(h.Get("x-signature"))
	fmt.Println(signer) // secrets never print
	// Output:
	// 1698708981
	// 08PdjWE9n95K4rcXLZS0z47SdFJ0k/hod/1WRNd2JugZemESR65/J8UJi6yGjd8KRPizSW9goFFqffDOgqGBDQ==
	// signing.Signer[REDACTED]
}
