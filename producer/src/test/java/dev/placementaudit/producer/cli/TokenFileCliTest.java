package dev.placementaudit.producer.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static dev.placementaudit.producer.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A wrong {@code --token-file} is named with what it holds, never quoted (issue 56): before, a certificate passed by
 * mistake came out whole in the error ({@code invalid header value: "Bearer -----BEGIN CERTIFICATE-----...}).
 */
class TokenFileCliTest {
    @TempDir
    Path dir;

    private static final String SECRET_LINE = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UEChMJQmFsdGltb3Jl";

    private CliRun loadWith(Path tokenFile) {
        Path model = dir.resolve("m.gguf");
        if (!Files.exists(model)) {
            assertThat(run("sample-model", "--layout", "llama-3.2-1b-q4km", "--out", model.toString()).exit()).isZero();
        }
        return run("load", "--model", model.toString(), "--deployment", "phone-1", "--release", "r1", "--collector", "http://127.0.0.1:1",
                "--token-file", tokenFile.toString());
    }

    @Test
    void aCertificateOrABinaryFileGivenAsTheTokenIsNamedAndNeverQuoted() throws Exception {
        Path certificate = Files.writeString(dir.resolve("collector.pem"), "-----BEGIN CERTIFICATE-----\n" + SECRET_LINE + "\n-----END CERTIFICATE-----\n");
        CliRun pem = loadWith(certificate);
        assertThat(pem.exit()).isEqualTo(2);
        assertThat(pem.err().strip()).isEqualTo("error: the token file " + certificate + " does not hold a token: it holds a PEM block (a certificate "
                + "or a key?); a token is one line of printable characters (placement-audit collector token makes one)");
        assertThat(pem.out() + pem.err()).doesNotContain(SECRET_LINE).doesNotContain("BEGIN CERTIFICATE");

        byte[] random = new byte[2048];
        new Random(7).nextBytes(random);
        Path keystore = Files.write(dir.resolve("collector.p12"), random);
        CliRun binary = loadWith(keystore);
        assertThat(binary.exit()).isEqualTo(2);
        assertThat(binary.err().strip()).startsWith("error: the token file " + keystore + " does not hold a token: it holds binary or non-ASCII bytes");
        assertThat(binary.err().length()).as("no bytes of the file in the error").isLessThan(300);

        Path twoLines = Files.writeString(dir.resolve("two.token"), "first-token\nsecond-token\n");
        assertThat(loadWith(twoLines).err()).contains("does not hold a token: it holds 2 lines").doesNotContain("first-token");
        assertThat(loadWith(dir.resolve("missing.token")).err().strip()).isEqualTo("error: the token file " + dir.resolve("missing.token")
                + " does not exist");
    }
}
