"""Three-letter language codes (ISO 639-2/3, as NLLB-200 writes them:
``fra_Latn``) as the two-letter ones (ISO 639-1) the language identifier
knows. Where ISO 639-3 splits a macrolanguage, the individual code NLLB-200
uses is listed too (``arb`` Modern Standard Arabic, ``pes`` Western Persian,
``zsm`` Standard Malay...)."""

from __future__ import annotations

TWO_LETTERS: dict[str, str] = {
    "afr": "af", "amh": "am", "ara": "ar", "arb": "ar", "asm": "as",
    "aze": "az", "azj": "az", "azb": "az", "bel": "be", "bul": "bg",
    "ben": "bn", "bre": "br", "bos": "bs", "cat": "ca", "ces": "cs",
    "cym": "cy", "dan": "da", "deu": "de", "ell": "el", "eng": "en",
    "epo": "eo", "spa": "es", "est": "et", "ekk": "et", "eus": "eu",
    "fas": "fa", "pes": "fa", "fin": "fi", "fra": "fr", "fry": "fy",
    "gle": "ga", "gla": "gd", "glg": "gl", "guj": "gu", "hau": "ha",
    "heb": "he", "hin": "hi", "hrv": "hr", "hat": "ht", "hun": "hu",
    "hye": "hy", "ind": "id", "ibo": "ig", "isl": "is", "ita": "it",
    "jpn": "ja", "jav": "jv", "kat": "ka", "kaz": "kk", "khm": "km",
    "kan": "kn", "kor": "ko", "kur": "ku", "kmr": "ku", "kir": "ky",
    "lat": "la", "lug": "lg", "lin": "ln", "lao": "lo", "lit": "lt",
    "lav": "lv", "lvs": "lv", "mlg": "mg", "plt": "mg", "mkd": "mk",
    "mal": "ml", "mon": "mn", "khk": "mn", "mar": "mr", "msa": "ms",
    "zsm": "ms", "mya": "my", "nep": "ne", "npi": "ne", "nld": "nl",
    "nor": "no", "nob": "no", "ori": "or", "ory": "or", "pan": "pa",
    "pol": "pl", "pus": "ps", "pbt": "ps", "por": "pt", "que": "qu",
    "quy": "qu", "ron": "ro", "rus": "ru", "san": "sa", "sin": "si",
    "slk": "sk", "slv": "sl", "som": "so", "sqi": "sq", "als": "sq",
    "srp": "sr", "swe": "sv", "swa": "sw", "swh": "sw", "tam": "ta",
    "tel": "te", "tha": "th", "tgl": "tl", "tur": "tr", "uig": "ug",
    "ukr": "uk", "urd": "ur", "uzb": "uz", "uzn": "uz", "vie": "vi",
    "xho": "xh", "yor": "yo", "zho": "zh", "zul": "zu", "kin": "rw",
    "sme": "se", "sna": "sn", "sot": "st", "arg": "an", "fao": "fo",
    "ltz": "lb", "wln": "wa", "bak": "ba", "mlt": "mt", "nno": "nn",
    "oci": "oc", "tgk": "tg", "tuk": "tk", "tat": "tt", "vol": "vo",
    "dzo": "dz", "nb": "no",
}  # fmt: skip

# English names of the two-letter codes above, which people type as often
# as codes ("German"); a name with several forms lists each.
NAMES: dict[str, str] = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "as": "Assamese",
    "az": "Azerbaijani", "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali",
    "br": "Breton", "bs": "Bosnian", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "fy": "Western Frisian", "ga": "Irish", "gd": "Scottish Gaelic",
    "gl": "Galician", "gu": "Gujarati", "ha": "Hausa", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "ig": "Igbo", "is": "Icelandic",
    "it": "Italian", "ja": "Japanese", "jv": "Javanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean",
    "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin", "lg": "Ganda",
    "ln": "Lingala", "lo": "Lao", "lt": "Lithuanian", "lv": "Latvian",
    "mg": "Malagasy", "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian",
    "mr": "Marathi", "ms": "Malay", "my": "Burmese", "ne": "Nepali",
    "nl": "Dutch", "no": "Norwegian", "or": "Odia", "pa": "Punjabi",
    "pl": "Polish", "ps": "Pashto", "pt": "Portuguese", "qu": "Quechua",
    "ro": "Romanian", "ru": "Russian", "sa": "Sanskrit", "si": "Sinhala",
    "sk": "Slovak", "sl": "Slovenian", "so": "Somali", "sq": "Albanian",
    "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil",
    "te": "Telugu", "th": "Thai", "tl": "Tagalog", "tr": "Turkish",
    "ug": "Uyghur", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek",
    "vi": "Vietnamese", "xh": "Xhosa", "yo": "Yoruba", "zh": "Chinese",
    "zu": "Zulu", "rw": "Kinyarwanda", "se": "Northern Sami", "sn": "Shona",
    "st": "Southern Sotho", "an": "Aragonese", "fo": "Faroese",
    "lb": "Luxembourgish", "wa": "Walloon", "ba": "Bashkir", "mt": "Maltese",
    "nn": "Norwegian Nynorsk", "oc": "Occitan", "tg": "Tajik", "tk": "Turkmen",
    "tt": "Tatar", "vo": "Volapük", "dz": "Dzongkha",
}  # fmt: skip
BY_NAME = {name.lower(): code for code, name in NAMES.items()}


def language_of(text: str) -> str:
    """The language a code or name stands for, as one key: ``de`` for
    ``de``, ``DE``, ``de_DE``, ``de-AT``, ``deu``, ``deu_Latn`` and
    ``German``; a code without a two-letter form stays itself (``ace``)."""
    lowered = text.strip().lower()
    if lowered in BY_NAME:
        return BY_NAME[lowered]
    code = lowered.replace("-", "_").split("_")[0]
    return TWO_LETTERS.get(code, code)


def name_of(code: str) -> str | None:
    """The English name of a model's code (``deu_Latn``: German), if known."""
    return NAMES.get(language_of(code))


def resolve_code(typed: str, codes: list[str], side: str) -> str:
    """The one code of ``codes`` that ``typed`` stands for: itself, or the
    one code of the same language (``de``, ``deu``, ``de_DE`` or ``German``
    for ``deu_Latn``). ``ValueError`` otherwise, naming the codes of that
    language (several: ``zho_Hans``, ``zho_Hant``) or the closest ones."""
    if typed in codes:
        return typed
    folded = {code.lower().replace("-", "_"): code for code in codes}
    if typed.lower().replace("-", "_") in folded:
        return folded[typed.lower().replace("-", "_")]
    language = language_of(typed)
    same = [code for code in codes if language_of(code) == language]
    if len(same) == 1:
        return same[0]
    if same:
        raise ValueError(
            f"{side} language {typed!r} is {len(same)} of the model's codes: "
            f"choose one of {', '.join(same)}"
        )
    import difflib

    close = difflib.get_close_matches(typed, codes, n=5, cutoff=0.5)
    hint = f"closest: {', '.join(close)}; " if close else ""
    raise ValueError(
        f"{side} language {typed!r} is not one of the model's {len(codes)} "
        f"codes ({hint}rosetta languages -m MODEL lists them)"
    )
