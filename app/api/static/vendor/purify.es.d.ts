// The part of DOMPurify 3.4.18's API the chat page uses (the package's dist/purify.es.d.mts has the rest).
export interface Config {
  ALLOWED_TAGS?: string[];
  ALLOWED_ATTR?: string[];
  FORBID_TAGS?: string[];
  FORBID_ATTR?: string[];
}
declare const DOMPurify: {
  sanitize(dirty: string, config?: Config): string;
  addHook(entryPoint: "afterSanitizeAttributes", hook: (node: Element) => void): void;
};
export default DOMPurify;
