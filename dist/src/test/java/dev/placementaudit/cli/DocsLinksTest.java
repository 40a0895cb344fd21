package dev.placementaudit.cli;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every relative link in README.md and docs/ points somewhere: the file exists, and a {@code #anchor} into a Markdown
 * file names one of its headings (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens). The manual moved
 * out of the README into docs/; a page renamed or a heading reworded must not leave a reader at a dead end.
 */
class DocsLinksTest {
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");

    @Test
    void everyRelativeLinkInTheReadmeAndTheDocsPointsSomewhere() throws IOException {
        Path root = repositoryRoot();
        List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        List<String> dead = new ArrayList<>();
        int checked = 0;
        for (Path page : pages) {
            for (String target : links(page)) {
                if (target.matches("^[a-z][a-z0-9+.-]*:.*")) {
                    continue; // http:, https:, mailto: ...
                }
                checked++;
                String file = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                String anchor = target.contains("#") ? target.substring(target.indexOf('#') + 1) : null;
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                if (!Files.exists(resolved)) {
                    dead.add(root.relativize(page) + ": " + target + " (no such file)");
                } else if (anchor != null && resolved.toString().endsWith(".md") && !anchors(resolved).contains(anchor)) {
                    dead.add(root.relativize(page) + ": " + target + " (no such heading in " + root.relativize(resolved) + ")");
                }
            }
        }
        assertThat(checked).as("relative links found").isGreaterThan(20);
        assertThat(dead).as("links that point nowhere").isEmpty();
    }

    @Test
    void theReadmeIsAFrontDoorNotTheManual() throws IOException {
        List<String> readme = Files.readAllLines(repositoryRoot().resolve("README.md"));
        assertThat(readme.size()).as("README.md lines").isLessThanOrEqualTo(200);
        assertThat(readme).contains("## A tour", "## Where next");
    }

    private static List<String> links(Path page) throws IOException {
        List<String> targets = new ArrayList<>();
        boolean fence = false;
        for (String line : Files.readAllLines(page)) {
            if (line.startsWith("```")) {
                fence = !fence;
                continue;
            }
            if (fence) {
                continue;
            }
            Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
            while (m.find()) {
                targets.add(m.group(1));
            }
        }
        return targets;
    }

    /** The anchors GitHub makes of a page's headings. */
    private static Set<String> anchors(Path page) throws IOException {
        Set<String> anchors = new HashSet<>();
        boolean fence = false;
        for (String line : Files.readAllLines(page)) {
            if (line.startsWith("```")) {
                fence = !fence;
            } else if (!fence && line.startsWith("#")) {
                String text = line.replaceFirst("^#+\\s*", "").toLowerCase(Locale.ROOT);
                anchors.add(text.replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-'));
            }
        }
        return anchors;
    }

    /** The repository: the nearest directory above the working one holding README.md and docs/. */
    private static Path repositoryRoot() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("docs"))) {
                return dir;
            }
        }
        throw new IllegalStateException("no README.md with docs/ beside it above " + Path.of("").toAbsolutePath());
    }
}
