package security

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 private keys (RFC 5958 EncryptedPrivateKeyInfo, the PEM
// block "ENCRYPTED PRIVATE KEY"), as Kafka's PEM key stores accept them
// with ssl.key.password: PBES2 (RFC 8018) with PBKDF2 (HMAC-SHA1, -SHA224,
// -SHA256, -SHA384 or -SHA512) and AES-128/192/256-CBC or DES-EDE3-CBC,
// what `openssl pkcs8 -topk8 -v2 <cipher>` writes. Go's crypto/x509 reads
// only unencrypted PKCS#8.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// DecryptPKCS8 decrypts an EncryptedPrivateKeyInfo (DER) with password and
// returns the PKCS#8 PrivateKeyInfo (DER), checked to parse. A key that
// does not decrypt is ErrKeyPassword; an encryption strata does not know
// is ErrPEM naming it.
func DecryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, fmt.Errorf("%w: not an EncryptedPrivateKeyInfo: %v", ErrPEM, err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("%w: key encryption %v is not supported: re-encrypt with `openssl pkcs8 -topk8 -v2 aes-256-cbc` (PBES2)", ErrPEM, info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("%w: PBES2 parameters: %v", ErrPEM, err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("%w: key derivation %v is not supported (PBKDF2 only)", ErrPEM, params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("%w: PBKDF2 parameters: %v", ErrPEM, err)
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("%w: PBKDF2 iteration count %d out of range 1..%d", ErrPEM, kdf.IterationCount, maxPBKDF2Iterations)
	}
	var prf func() hash.Hash
	switch a := kdf.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
		prf = sha1.New
	case a.Equal(oidHMACSHA224):
		prf = sha256.New224
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA384):
		prf = sha512.New384
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("%w: PBKDF2 PRF %v is not supported", ErrPEM, a)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch a := params.EncryptionScheme.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case a.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case a.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case a.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("%w: cipher %v is not supported (AES-CBC, DES-EDE3-CBC)", ErrPEM, a)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, fmt.Errorf("%w: PBKDF2 key length %d does not fit the cipher's %d", ErrPEM, kdf.KeyLength, keyLen)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("%w: cipher IV: %v", ErrPEM, err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("%w: PBKDF2: %v", ErrPEM, err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPEM, err)
	}
	bs := block.BlockSize()
	if len(iv) != bs {
		return nil, fmt.Errorf("%w: cipher IV of %d bytes, want %d", ErrPEM, len(iv), bs)
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%bs != 0 {
		return nil, fmt.Errorf("%w: encrypted data of %d bytes is not whole blocks", ErrPEM, len(data))
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding: a wrong password leaves garbage here (or, rarely, a
	// valid-looking pad and then a body that does not parse)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > bs || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, ErrKeyPassword
	}
	plain = plain[:len(plain)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, ErrKeyPassword
	}
	return plain, nil
}

// DecryptPEMKey returns the PEM private key of a key store: with
// ssl.key.password, its ENCRYPTED PRIVATE KEY block decrypted (PKCS#8
// PBES2, DecryptPKCS8) as an unencrypted PRIVATE KEY block, as
// Kafka's PEM key store reads it; without, the text as it is. An encrypted
// key without the password, the password with an unencrypted key (Kafka
// refuses it too) and OpenSSL's legacy encrypted PEM (Proc-Type header)
// are errors that say so.
func DecryptPEMKey(text []byte, password string) ([]byte, error) {
	for rest := text; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		if _, legacy := blk.Headers["Proc-Type"]; legacy {
			return nil, fmt.Errorf("%w: the private key is in OpenSSL's legacy encrypted PEM form; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc` (encrypted PKCS#8 and ssl.key.password)", ErrPEM)
		}
		switch blk.Type {
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, fmt.Errorf("%w: the private key is encrypted: set ssl.key.password", ErrPEM)
			}
			der, err := DecryptPKCS8(blk.Bytes, password)
			if err != nil {
				return nil, fmt.Errorf("ssl.key.password: %w", err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if password != "" {
				return nil, fmt.Errorf("%w: ssl.key.password is set but the private key is not encrypted (Kafka reads an encrypted PKCS#8 key then)", ErrPEM)
			}
			return text, nil
		}
	}
	return text, nil
}
