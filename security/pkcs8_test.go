package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// encryptPKCS8 is the test's own PBES2 encryption (PBKDF2-HMAC-SHA256,
// AES-256-CBC), for machines without openssl.
func encryptPKCS8(t *testing.T, der []byte, password string, iter int) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(der)%16
	plain := append(append([]byte(nil), der...), make([]byte, pad)...)
	for i := len(der); i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	block, _ := aes.NewCipher(key)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	mustDER := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kdf := mustDER(pbkdf2Params{Salt: salt, IterationCount: iter, PRF: algorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
	params := mustDER(pbes2Params{
		KeyDerivationFunc: algorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: kdf}},
		EncryptionScheme:  algorithmIdentifier{Algorithm: oidAES256CBC, Parameters: asn1.RawValue{FullBytes: mustDER(iv)}},
	})
	return mustDER(encryptedPrivateKeyInfo{Algorithm: algorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}}, EncryptedData: enc})
}

func testKeyDER(t *testing.T) []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestDecryptPKCS8: keys encrypted by openssl pkcs8 -topk8 -v2 with each
// cipher and PRF (when openssl is installed) and by the test's own PBES2
// decrypt to the original key with the password; a wrong password is
// ErrKeyPassword; an unknown scheme and truncated or garbage DER are
// ErrPEM, never a panic.
func TestDecryptPKCS8(t *testing.T) {
	der := testKeyDER(t)
	type enc struct {
		name string
		der  []byte
	}
	cases := []enc{{"go-pbes2-aes256-sha256", encryptPKCS8(t, der, "s3cret", 2048)}}
	if _, err := exec.LookPath("openssl"); err == nil {
		dir := t.TempDir()
		in := filepath.Join(dir, "key.pem")
		if err := os.WriteFile(in, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"-v2", "aes-256-cbc"},
			{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
			{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"},
			{"-v2", "des3"},
		} {
			out, err := exec.Command("openssl", append([]string{"pkcs8", "-topk8", "-in", in, "-passout", "pass:s3cret"}, args...)...).Output()
			if err != nil {
				t.Fatalf("openssl %v: %v", args, err)
			}
			b, _ := pem.Decode(out)
			if b == nil || b.Type != "ENCRYPTED PRIVATE KEY" {
				t.Fatalf("openssl %v wrote %q", args, out)
			}
			cases = append(cases, enc{"openssl" + filepath.Join(args...), b.Bytes})
		}
	} else {
		t.Log("openssl not installed: only the test's own encryption")
	}
	for _, c := range cases {
		got, err := DecryptPKCS8(c.der, "s3cret")
		if err != nil || string(got) != string(der) {
			t.Errorf("%s: %v", c.name, err)
		}
		if _, err := DecryptPKCS8(c.der, "wrong"); !errors.Is(err, ErrKeyPassword) {
			t.Errorf("%s: wrong password: %v", c.name, err)
		}
		for n := 0; n < len(c.der); n += 7 {
			if _, err := DecryptPKCS8(c.der[:n], "s3cret"); err == nil {
				t.Errorf("%s: truncated at %d accepted", c.name, n)
			}
		}
	}
	if _, err := DecryptPKCS8(der, "s3cret"); !errors.Is(err, ErrPEM) {
		t.Errorf("an unencrypted key: %v", err)
	}
	if _, err := DecryptPKCS8([]byte("garbage"), "s3cret"); !errors.Is(err, ErrPEM) {
		t.Errorf("garbage: %v", err)
	}
}
