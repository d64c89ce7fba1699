// BERT's uncased WordPiece tokenizer (what all-MiniLM-L6-v2's tokenizer.json describes):
// clean text, space out CJK characters, lowercase, strip accents, split on whitespace and
// punctuation, then greedy longest-match WordPiece with "##" continuations and [UNK] for words
// that do not split (or exceed 100 characters). Ids: [CLS] tokens [SEP], truncated to maxLength.
'use strict';

class WordPieceTokenizer {
  constructor(vocabText, { doLowerCase = true, maxLength = 128 } = {}) {
    this.vocab = new Map();
    vocabText.split('\n').forEach((token, id) => {
      const t = token.replace(/\r$/, '');
      if (t.length && !this.vocab.has(t)) this.vocab.set(t, id);
    });
    this.doLowerCase = doLowerCase;
    this.maxLength = maxLength;
    this.unk = this.vocab.get('[UNK]');
  }

  static isPunctuation(ch) {
    const c = ch.codePointAt(0);
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
    return /\p{P}/u.test(ch);
  }

  static isCjk(c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
      (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
      (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
  }

  basicTokens(text) {
    let cleaned = '';
    for (const ch of text) {
      const c = ch.codePointAt(0);
      if (c === 0 || c === 0xFFFD || (/\p{C}/u.test(ch) && !/[\t\n\r]/.test(ch))) continue;
      if (/\s/u.test(ch)) cleaned += ' ';
      else if (WordPieceTokenizer.isCjk(c)) cleaned += ` ${ch} `;
      else cleaned += ch;
    }
    if (this.doLowerCase) {
      cleaned = cleaned.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '');
    }
    const tokens = [];
    for (const word of cleaned.split(' ')) {
      let current = '';
      for (const ch of word) {
        if (WordPieceTokenizer.isPunctuation(ch)) {
          if (current) tokens.push(current);
          tokens.push(ch);
          current = '';
        } else {
          current += ch;
        }
      }
      if (current) tokens.push(current);
    }
    return tokens;
  }

  wordPieces(word) {
    const chars = Array.from(word);
    if (chars.length > 100) return [this.unk];
    const ids = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found = null;
      while (start < end) {
        const piece = (start > 0 ? '##' : '') + chars.slice(start, end).join('');
        if (this.vocab.has(piece)) { found = this.vocab.get(piece); break; }
        end -= 1;
      }
      if (found === null) return [this.unk];
      ids.push(found);
      start = end;
    }
    return ids;
  }

  encode(text) {
    let ids = [];
    for (const token of this.basicTokens(text)) ids.push(...this.wordPieces(token));
    ids = ids.slice(0, this.maxLength - 2);
    return [this.vocab.get('[CLS]'), ...ids, this.vocab.get('[SEP]')];
  }
}

if (typeof module !== 'undefined') module.exports = { WordPieceTokenizer };
