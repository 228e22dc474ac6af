// highlight.js 11.12.0: only what the chat page uses.
declare const hljs: {
  getLanguage(name: string): object | undefined;
  highlight(code: string, options: { language: string; ignoreIllegals?: boolean }): { value: string; language?: string };
  highlightAuto(code: string): { value: string; language?: string };
};
export default hljs;
