package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * {@code strftime_now(format)}, as {@code transformers} gives chat templates: {@code
 * datetime.now().strftime(format)}, the local time without a zone, in the C locale (English names).
 * The time is the render's clock ({@link JinjaChatTemplate#withClock}), so a test can fix it. The
 * directives are C's and Python's ({@code %d %b %Y %H:%M:%S}, {@code %a %A %B %m %y %I %p %j %f},
 * {@code %%}, and glibc's {@code %-d} without padding); {@code %z} and {@code %Z} are empty, as for
 * Python's naive {@code datetime}.
 */
final class Strftime {

    private Strftime() {}

    /**
     * Called by templates as {@code strftime_now(format)}.
     *
     * @param format the C format
     * @return the render's local time, formatted
     */
    public static String now(String format) {
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        long millis = interpreter.getConfig().getDateTimeProvider().getCurrentTimeMillis();
        ZoneId zone = interpreter.getConfig().getTimeZone();
        return format(LocalDateTime.ofInstant(Instant.ofEpochMilli(millis), zone), format);
    }

    /**
     * Formats a time as C's {@code strftime} does.
     *
     * @param time the time
     * @param format the C format
     * @return the text
     * @throws TemplateFailure for a directive it does not know
     */
    static String format(LocalDateTime time, String format) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                out.append(c);
                continue;
            }
            boolean unpadded = format.charAt(i + 1) == '-' && i + 2 < format.length();
            i += unpadded ? 2 : 1;
            out.append(directive(time, format.charAt(i), unpadded));
        }
        return out.toString();
    }

    private static String directive(LocalDateTime time, char directive, boolean unpadded) {
        String pattern =
                switch (directive) {
                    case 'a' -> "EEE";
                    case 'A' -> "EEEE";
                    case 'b', 'h' -> "MMM";
                    case 'B' -> "MMMM";
                    case 'd' -> unpadded ? "d" : "dd";
                    case 'm' -> unpadded ? "M" : "MM";
                    case 'y' -> "yy";
                    case 'Y' -> "yyyy";
                    case 'H' -> unpadded ? "H" : "HH";
                    case 'I' -> unpadded ? "h" : "hh";
                    case 'p' -> "a";
                    case 'M' -> unpadded ? "m" : "mm";
                    case 'S' -> unpadded ? "s" : "ss";
                    case 'f' -> "SSSSSS";
                    case 'j' -> unpadded ? "D" : "DDD";
                    case 'z', 'Z' -> "";
                    case '%' -> "'%'";
                    default -> null;
                };
        if (pattern == null) {
            throw new TemplateFailure(
                    "ValueError: strftime_now has no directive %" + directive + " here");
        }
        return pattern.isEmpty()
                ? ""
                : DateTimeFormatter.ofPattern(pattern, Locale.US).format(time);
    }
}
